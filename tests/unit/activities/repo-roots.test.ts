/**
 * KILN_REPO_ROOTS against where a run really goes: a directory under a root whose `.git` is a
 * gitfile or a symlink to a repository outside made that outside repository the run's (its
 * history printed, worktree entries written into its .git). Real git, the real prepare activity.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { operatorConfigFromEnv } from '../../../src/policy/run-request.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { stdio: 'pipe' }).toString();

const served = realpathSync(mkdtempSync(join(tmpdir(), 'kiln-served-')));
// a repository this worker must not serve, with history worth stealing
const outside = repoWith({ 'secret.txt': 'DB_PASSWORD=hunter2\n' }, 'kiln-outside-');
const operator = operatorConfigFromEnv({ KILN_REPO_ROOTS: served });
const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', operator });

/** A directory under the root that looks like a repo of its own. */
function underRoot(name: string, dotGit: (dir: string) => void): string {
  const dir = join(served, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'a.txt'), 'x\n');
  dotGit(dir);
  return dir;
}

async function prepare(repo: string) {
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  return new MockActivityEnvironment().run(acts.prepareWorkspace, input, undefined, { baselineApart: true });
}

describe('KILN_REPO_ROOTS and where a repo really is', () => {
  const noWorktreesIn = (gitDir: string) => expect(existsSync(join(gitDir, 'worktrees'))).toBe(false);

  it('attack: .git is a gitfile naming a repository outside the roots: refused, nothing written there', async () => {
    const repo = underRoot('gitfile', (dir) => writeFileSync(join(dir, '.git'), `gitdir: ${join(outside, '.git')}\n`));
    // git itself takes it as that repository
    expect(git(repo, 'log', '-p')).toContain('hunter2');
    await expect(prepare(repo)).rejects.toThrow(/the repo's git directory .* is outside the repositories this worker serves \(KILN_REPO_ROOTS=/);
    noWorktreesIn(join(outside, '.git'));
  });

  it('attack: .git is a symlink to a repository outside the roots: refused, naming where it leads', async () => {
    const repo = underRoot('symlinked', (dir) => symlinkSync(join(outside, '.git'), join(dir, '.git')));
    expect(git(repo, 'log', '-p')).toContain('hunter2');
    await expect(prepare(repo)).rejects.toThrow(/the repo's git directory .*kiln-outside-.* is outside the repositories this worker serves/);
    noWorktreesIn(join(outside, '.git'));
  });

  it("attack: a repo of its own that borrows the outside repository's objects (alternates), or whose .kiln leads out: refused", async () => {
    const borrowing = join(served, 'borrowing');
    execFileSync('git', ['clone', '-q', '--shared', outside, borrowing]);
    expect(git(borrowing, 'log', '-p')).toContain('hunter2');
    await expect(prepare(borrowing)).rejects.toThrow(/borrowed object store \(alternates\)/);

    const kilnOut = repoWith({ 'a.txt': 'x\n' }, 'kiln-tmp-');
    const leaking = join(served, 'leaking');
    execFileSync('git', ['clone', '-q', '--no-local', kilnOut, leaking]);
    const elsewhere = mkdtempSync(join(tmpdir(), 'kiln-elsewhere-'));
    symlinkSync(elsewhere, join(leaking, '.kiln'));
    await expect(prepare(leaking)).rejects.toThrow(/the repo's run directory .* is outside/);
    expect(existsSync(join(elsewhere, 'worktrees'))).toBe(false);
  });

  it('control: a repository of its own under the root is prepared', async () => {
    const own = join(served, 'own');
    execFileSync('git', ['clone', '-q', '--no-local', outside, own]);
    const prep = await prepare(own);
    expect(prep.ok).toBe(true);
    expect(existsSync(prep.worktree)).toBe(true);
  });
});
