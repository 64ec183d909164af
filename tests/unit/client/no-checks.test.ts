/**
 * What `kiln run` decides before it starts a run with no checks: the run's own settings, with
 * AGENTS.md read at the run's base commit as its worktree will hold it — not the checkout's copy.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentsAtBase, noChecksError } from '../../../src/client/no-checks.js';
import { loadRunSettings } from '../../../src/policy/precedence.js';
import { trustRepo } from '../../../src/policy/trust.js';
import { commitAll, git, repoWith } from '../../helpers/repo.js';

const agents = (check: string) => `# Agents\n\n## Commands\n- Test: ${check}\n`;
const quote = (s: string) => s;

async function settingsAt(repo: string, home: string, base: string | undefined) {
  const readAgents = await agentsAtBase(repo, base);
  return loadRunSettings(repo, { home, approvalMode: 'default', ...(readAgents ? { readAgents } : {}) });
}

describe('no checks, decided at start', () => {
  it("attack: trusted now, but the run's --base holds another AGENTS.md: the run would have no checks, and the start says so", async () => {
    const repo = repoWith({ 'AGENTS.md': agents('npm test') });
    const old = git(repo, 'rev-parse', 'HEAD').trim();
    writeFileSync(join(repo, 'AGENTS.md'), agents('npm run test:all'));
    commitAll(repo, 'new checks');
    const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
    trustRepo(repo, home);

    // what the run reads in its worktree at that base (workspace.ts: agentsDir is the worktree)
    const worktree = join(mkdtempSync(join(tmpdir(), 'kiln-wt-')), 'wt');
    git(repo, 'worktree', 'add', '-q', '--detach', worktree, old);
    const run = await loadRunSettings(repo, { home, approvalMode: 'default', agentsDir: worktree });
    expect(run.checks).toEqual([]);
    // the checkout's copy would say otherwise: the run would start, work, and wait for a person
    expect((await loadRunSettings(repo, { home, approvalMode: 'default' })).checks).toEqual(['npm run test:all']);

    const start = await settingsAt(repo, home, old);
    expect(start.checks).toEqual(run.checks);
    expect(noChecksError(start, repo, quote).message).toMatch(
      /AGENTS\.md names checks \(npm test\) but the repo's configuration is changed since `kiln trust`/,
    );
    expect(noChecksError(start, repo, quote).exitCode).toBe(2);
  });

  it('control: at HEAD (the default base) the trusted checks apply, as in the run', async () => {
    const repo = repoWith({ 'AGENTS.md': agents('npm test') });
    const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
    trustRepo(repo, home);
    expect((await settingsAt(repo, home, undefined)).checks).toEqual(['npm test']);
  });

  it('a base that names no commit is left to the run to report: the checkout is read', async () => {
    const repo = repoWith({ 'AGENTS.md': agents('npm test') });
    expect(await agentsAtBase(repo, 'no-such-ref')).toBeUndefined();
  });
});
