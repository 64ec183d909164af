/**
 * Every way a repository's config can make git run a program, tried twice in a repository that
 * sets all of them: plain git (the control) runs the trap; Kiln's runner does not.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configEnv, gitHardeningEnv, hardenedGitArgs } from '../../../src/git/hardening.js';
import { git, GitError, gitResult } from '../../../src/git/run.js';
import { hostileRepo, plainGit } from '../../helpers/hostile-git.js';
import { repoWith } from '../../helpers/repo.js';

const identity = { name: 'Kiln', email: 'kiln@example.invalid' };

interface Case {
  hardening: string;
  /** the trap that must not run */
  trap: string;
  args: (repo: string, trap: (name: string) => string) => string[];
}

const cases: Case[] = [
  {
    hardening: 'fsmonitor (from an included config file), ls-files',
    trap: 'fsmonitor',
    args: () => ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
  },
  { hardening: 'fsmonitor, diff HEAD', trap: 'fsmonitor', args: () => ['diff', 'HEAD', '--no-color', '--'] },
  { hardening: 'fsmonitor, status', trap: 'fsmonitor', args: () => ['status', '--porcelain'] },
  { hardening: 'hooks: post-index-change on add', trap: 'hook-post-index-change', args: () => ['add', '-A'] },
  { hardening: 'hooks: post-checkout on worktree add', trap: 'hook-post-checkout', args: (r) => ['worktree', 'add', '--detach', `${r}-wt`, 'HEAD'] },
  { hardening: 'hooks: reference-transaction on update-ref', trap: 'hook-reference-transaction', args: () => ['update-ref', 'refs/heads/x', 'HEAD'] },
  { hardening: 'external diff (diff.external)', trap: 'extdiff', args: () => ['diff'] },
  { hardening: 'diff driver command (diff.<driver>.command)', trap: 'diffcmd', args: () => ['diff'] },
  { hardening: 'textconv (diff.<driver>.textconv), log -p', trap: 'textconv', args: () => ['log', '-p', '-1'] },
  { hardening: 'clean filter on add', trap: 'clean', args: () => ['add', '-A'] },
  { hardening: 'clean filter on diff of the worktree', trap: 'clean', args: () => ['diff', 'HEAD'] },
  { hardening: 'process filter on add', trap: 'process', args: () => ['add', '-A'] },
  { hardening: 'smudge filter on worktree add', trap: 'smudge', args: (r) => ['worktree', 'add', '--detach', `${r}-wt`, 'HEAD'] },
  { hardening: 'gpg signing (commit.gpgSign + gpg.program)', trap: 'gpg', args: () => ['commit', '-q', '--allow-empty', '--no-verify', '-m', 'x'] },
  { hardening: 'editor (core.editor)', trap: 'editor', args: () => ['commit', '--allow-empty', '--no-verify'] },
  { hardening: 'ssh command (core.sshCommand)', trap: 'ssh', args: () => ['ls-remote', 'ssh://example.invalid/repo'] },
  { hardening: 'ext:: transport (protocol.ext.allow=always in the repo)', trap: 'ext', args: (_r, trap) => ['ls-remote', `ext::${trap('ext')}`] },
];

describe('the git runner neutralises every program a repository config can name', () => {
  it.each(cases)('$hardening', async (c) => {
    const control = hostileRepo();
    plainGit(control.repo, c.args(control.repo, control.trap));
    expect(control.ran(), 'control: plain git runs it').toContain(c.trap);

    const h = hostileRepo();
    await gitResult(h.repo, c.args(h.repo, h.trap), { identity });
    expect(h.ran()).toEqual([]);
  });

  it('a pager (core.pager) does not run even on a terminal; control: plain git pages through it', () => {
    // the runner never has a terminal; this shows its arguments alone keep a pager out
    const onTty = (repo: string, argv: string[], env: Record<string, string>) => {
      const cmd = ['git', ...argv].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
      spawnSync('script', ['-qec', cmd, '/dev/null'], { cwd: repo, env: { ...env, TERM: 'dumb' }, stdio: 'ignore', timeout: 30_000 });
    };
    const control = hostileRepo();
    onTty(control.repo, ['log', '-1'], { PATH: process.env.PATH ?? '' });
    expect(control.ran()).toContain('pager');

    const h = hostileRepo();
    onTty(h.repo, [...hardenedGitArgs(), 'log', '-1'], gitHardeningEnv({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' }));
    expect(h.ran()).not.toContain('pager');
  });

  it('the user-wide config (~/.gitconfig) is not read; control: plain git reads it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
    const h = hostileRepo();
    writeFileSync(join(home, '.gitconfig'), `[core]\n\tfsmonitor = ${h.trap('home-fsmonitor')}\n`);
    // the repo's own fsmonitor (in its include) would win; take it out so the home one applies
    plainGit(h.repo, ['config', '--unset', 'include.path']);
    plainGit(h.repo, ['ls-files'], { HOME: home, XDG_CONFIG_HOME: join(home, '.config') });
    expect(h.ran()).toContain('home-fsmonitor');
    h.forget();

    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      await gitResult(h.repo, ['ls-files']);
    } finally {
      process.env.HOME = saved;
    }
    expect(h.ran()).toEqual([]);
  });

  it('GIT_* variables of the worker do not reach git: no redirect to another repository, no external diff', async () => {
    const h = hostileRepo();
    const other = repoWith({ 'z.txt': 'z\n' });
    const saved = { ...process.env };
    Object.assign(process.env, {
      GIT_DIR: join(other, '.git'),
      GIT_WORK_TREE: other,
      GIT_EXTERNAL_DIFF: h.trap('env-extdiff'),
      GIT_CONFIG_PARAMETERS: `'core.fsmonitor=${h.trap('env-fsmonitor')}'`,
    });
    try {
      expect((await git(h.repo, ['rev-parse', '--show-toplevel'])).trim()).toBe(h.repo);
      await git(h.repo, ['diff']);
    } finally {
      for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_EXTERNAL_DIFF', 'GIT_CONFIG_PARAMETERS']) delete process.env[k];
      Object.assign(process.env, saved);
    }
    expect(h.ran()).toEqual([]);
  });

  it('keeps a working patch: diff output is the plain a/ b/ patch, filters and drivers blanked', async () => {
    const h = hostileRepo();
    const patch = await git(h.repo, ['diff']);
    expect(patch).toContain('--- a/a.txt\n+++ b/a.txt');
    expect(patch).toContain('+changed\n');
    expect(patch.endsWith('\n')).toBe(true);
  });

  it('output past the cap and a failing command are errors that name git; the exit code of gitResult is data', async () => {
    const h = hostileRepo();
    await expect(git(h.repo, ['diff'], { maxBytes: 10 })).rejects.toThrow(/more than the cap/);
    await expect(git(h.repo, ['rev-parse', '--verify', 'nope^{commit}'])).rejects.toBeInstanceOf(GitError);
    expect((await gitResult(h.repo, ['rev-parse', '--verify', 'nope^{commit}'])).exitCode).not.toBe(0);
    // stdin is closed: a command that reads it ends at once instead of waiting
    expect((await git(h.repo, ['hash-object', '--stdin'])).trim()).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
  });

  it('config entries pass by environment with any key spelling', () => {
    expect(configEnv([['filter.a=b.clean', '']])).toEqual({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'filter.a=b.clean', GIT_CONFIG_VALUE_0: '' });
  });
});

describe('the drivers a config defines are read again whenever it changes', () => {
  const trapIn = (dir: string) => {
    const script = join(dir, 'late.sh');
    writeFileSync(script, `#!/bin/sh\ntouch '${join(dir, 'late.ran')}'\ncat\n`, { mode: 0o755 });
    return script;
  };

  it('attack: a filter defined after an earlier call (repo config, then a linked worktree’s own) does not run; control: plain git runs it', async () => {
    const traps = mkdtempSync(join(tmpdir(), 'kiln-traps-'));
    const trap = trapIn(traps);
    const repo = repoWith({ 'a.txt': 'one\n', '.gitattributes': '*.txt filter=late\n' });
    // the first call learns there are no drivers
    expect((await gitResult(repo, ['status', '--porcelain'])).exitCode).toBe(0);
    plainGit(repo, ['config', 'filter.late.clean', trap]);
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    await gitResult(repo, ['add', '-A']);
    expect(existsSync(join(traps, 'late.ran')), 'the repo config changed since the first call').toBe(false);

    const wt = `${repo}-wt`;
    plainGit(repo, ['config', '--unset', 'filter.late.clean']);
    plainGit(repo, ['worktree', 'add', '-q', '--detach', wt, 'HEAD']);
    expect((await gitResult(wt, ['status', '--porcelain'])).exitCode).toBe(0);
    plainGit(repo, ['config', 'extensions.worktreeConfig', 'true']);
    plainGit(wt, ['config', '--worktree', 'filter.late.clean', trap]);
    writeFileSync(join(wt, 'a.txt'), 'three\n');
    await gitResult(wt, ['add', '-A']);
    expect(existsSync(join(traps, 'late.ran')), 'the worktree config changed since the first call').toBe(false);

    plainGit(wt, ['add', '-A', '--renormalize']);
    expect(existsSync(join(traps, 'late.ran')), 'control: plain git runs the filter').toBe(true);
  });
});
