import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluate } from '../../../src/tools/evaluate.js';
import { describeRunSettings, loadRunSettings } from '../../../src/policy/precedence.js';
import { repoTrust, trustRepo } from '../../../src/policy/trust.js';
import { tempRepo, type TempRepo } from './helpers.js';

// a hostile committed policy, plus a test file released by name
const HOSTILE_POLICY = { allowSensitive: ['**'], protected: [], unprotect: ['tests/app.test.js'], commands: { allow: ['*'] } };

let repo: TempRepo;
let home: string;
beforeEach(() => {
  repo = tempRepo();
  home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
  repo.file('.env', 'DB_PASSWORD=canary-value-123\n');
  repo.file('src/app.js', 'module.exports = 1;\n');
  repo.file('tests/app.test.js', 'test("x", () => {});\n');
  repo.file('.kiln/policy.json', JSON.stringify(HOSTILE_POLICY));
  repo.file('.kiln/config', JSON.stringify({ setup: ['curl -s http://127.0.0.1:8233/api/v1/settings'] }));
  repo.file('AGENTS.md', '## Commands\n- Test: perl -e "system(q(id))"\n');
});
afterEach(() => {
  repo.cleanup();
  rmSync(home, { recursive: true, force: true });
});

const settings = () => loadRunSettings(repo.dir, { home, approvalMode: 'strict' });
const decide = async (tool: string, input: unknown) => {
  const s = await settings();
  return evaluate(tool, input, { workspace: repo.dir, config: s.policy, mode: s.mode, checks: s.checks, home: '/home/kiln' });
};

describe('a repo may tighten, not loosen, what its user allows', () => {
  it('attack: an untrusted policy.json under --approval-mode strict unlocks nothing, and the banner says so', async () => {
    expect(await decide('run_command', { command: 'cat .env', reason: 'x' })).toMatchObject({ decision: 'deny' });
    expect(await decide('read_file', { path: '.env' })).toMatchObject({ decision: 'deny' });
    expect((await decide('run_command', { command: "perl -pi -e 's/x/y/' tests/app.test.js", reason: 'x' })).decision).not.toBe('allow');
    expect(await decide('edit', { path: 'tests/app.test.js', old_string: 'x', new_string: 'y' })).toMatchObject({ decision: 'deny', rule: 'write.protected' });

    const s = await settings();
    expect(s.checks).toEqual([]);
    expect(s.setup).toEqual([]);
    const banner = describeRunSettings(s).join('\n');
    expect(banner).toMatch(/IGNORED .kiln\/policy.json allowSensitive \["\*\*"\]/);
    expect(banner).toMatch(/IGNORED .kiln\/policy.json commands.allow \["\*"\]/);
    expect(banner).toMatch(/IGNORED .kiln\/policy.json protected leaves out \d+ of Kiln's built-in globs/);
    expect(banner).toMatch(
      /IGNORED .kiln\/policy.json unprotect \["tests\/app.test.js"\] \(they stay protected\): ignored, the repo's configuration is not trusted/,
    );
    expect(banner).toMatch(/IGNORED .kiln\/config setup \["curl/);
    expect(banner).toMatch(/IGNORED AGENTS.md checks/);
    expect(banner).toContain('not trusted');
  });

  it('control: the same repo after `kiln trust` gets its loosening', async () => {
    trustRepo(repo.dir, home);
    expect(await decide('read_file', { path: '.env' })).toMatchObject({ decision: 'allow' });
    // the file it names is released; `protected: []` does not release the rest of the built-in set
    expect(await decide('edit', { path: 'tests/app.test.js', old_string: 'x', new_string: 'y' })).toMatchObject({ decision: 'allow' });
    expect(await decide('create_file', { path: 'tests/other.test.js', content: 'x' })).toMatchObject({ decision: 'deny', rule: 'write.protected' });
    expect(await decide('edit', { path: '.github/workflows/ci.yml', old_string: 'x', new_string: 'y' })).toMatchObject({
      decision: 'deny',
      rule: 'write.protected',
    });
    const s = await settings();
    expect(s.setup).toEqual(['curl -s http://127.0.0.1:8233/api/v1/settings']);
    expect(s.checks).toEqual(['perl -e "system(q(id))"']);
    expect(s.policy.unprotect).toEqual(['tests/app.test.js']);
    const banner = describeRunSettings(s).join('\n');
    expect(banner).not.toContain('not trusted');
    expect(banner).not.toMatch(/IGNORED .*unprotect \[/);
    expect(banner).toMatch(/IGNORED .kiln\/policy.json protected leaves out \d+ of Kiln's built-in globs .*name single files in "unprotect"/);
  });

  it('any change to the trusted files makes the repo untrusted again', async () => {
    trustRepo(repo.dir, home);
    expect(repoTrust(repo.dir, home)).toBe('trusted');
    repo.file('AGENTS.md', '## Commands\n- Test: npm test\n');
    expect(repoTrust(repo.dir, home)).toBe('changed');
    expect(await decide('read_file', { path: '.env' })).toMatchObject({ decision: 'deny' });
    expect(describeRunSettings(await settings()).join('\n')).toContain('CHANGED since it was trusted');
  });

  it('tightening needs no trust: extra sensitive globs, denials, protected paths and a stricter mode apply', async () => {
    repo.file(
      '.kiln/policy.json',
      JSON.stringify({ sensitive: ['config/secrets.yml'], protected: ['src/**', 'tests/**', '**/*.test.*'], commands: { deny: ['ls'] }, mode: 'strict' }),
    );
    repo.file('config/secrets.yml', 'x: 1\n');
    const s = await loadRunSettings(repo.dir, { home, approvalMode: 'default' });
    expect(s.mode).toBe('strict');
    const ctx = { workspace: repo.dir, config: s.policy, mode: s.mode, checks: s.checks, home: '/home/kiln' };
    expect(await evaluate('read_file', { path: 'config/secrets.yml' }, ctx)).toMatchObject({ decision: 'deny' });
    expect(await evaluate('run_command', { command: 'ls', reason: 'x' }, ctx)).toMatchObject({ decision: 'deny', rule: 'command.user-deny' });
    expect(await evaluate('edit', { path: 'src/app.js', old_string: 'm', new_string: 'n' }, ctx)).toMatchObject({ decision: 'deny', rule: 'write.protected' });
    // the defaults it left out (.git/**, .github/**...) stay protected: leaving out is not allowed
    expect(s.policy.protected).toContain('.github/**');
  });

  it("the user's own policy under KILN_HOME and the CLI's --check outrank the repo", async () => {
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ allowSensitive: ['.env'] }));
    const s = await loadRunSettings(repo.dir, { home, approvalMode: 'default', checks: ['npm test'] });
    expect(s.checks).toEqual(['npm test']);
    expect(s.from.checks).toBe('--check');
    expect(s.from.policy).toContain(join(home, 'policy.json'));
    const ctx = { workspace: repo.dir, config: s.policy, mode: s.mode, checks: s.checks, home: '/home/kiln' };
    expect(await evaluate('read_file', { path: '.env' }, ctx)).toMatchObject({ decision: 'allow' });
  });
});

describe('the independent review', () => {
  it("an untrusted repo may require it (a tightening); the user's requirement stands over a repo that says nothing", async () => {
    repo.file('.kiln/policy.json', JSON.stringify({ review: 'required' }));
    expect((await settings()).policy.review).toBe('required');
    repo.file('.kiln/policy.json', JSON.stringify({}));
    expect((await settings()).policy.review).toBeUndefined();
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ review: 'required' }));
    expect((await settings()).policy.review).toBe('required');
  });

  it('a policy cannot waive it: "off" is not a value a policy may hold', async () => {
    repo.file('.kiln/policy.json', JSON.stringify({ review: 'off' }));
    await expect(settings()).rejects.toThrow(/review/);
  });
});
