import { afterAll, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gitHardeningEnv, hardenedGitArgs, HARDENED_DIFF_FLAGS } from '../../../src/git/hardening.js';
import { cleanupTempDirs, git, makeRepo, tempDir } from '../sandbox/helpers.js';

afterAll(cleanupTempDirs);

const identity = ['-c', 'user.name=Kiln', '-c', 'user.email=kiln@example.invalid'];

/** A repository whose own config would run programs: a hook, a pager, an external diff. */
function booby(): { repo: string; marks: string } {
  const repo = makeRepo();
  const marks = tempDir('marks');
  const hook = join(repo, '.git/hooks/pre-commit');
  writeFileSync(hook, `#!/bin/sh\ntouch '${marks}/hook-ran'\n`);
  chmodSync(hook, 0o755);
  const extDiff = join(marks, 'extdiff.sh');
  writeFileSync(extDiff, `#!/bin/sh\ntouch '${marks}/extdiff-ran'\n`);
  chmodSync(extDiff, 0o755);
  git(repo, 'config', 'diff.external', extDiff);
  writeFileSync(join(repo, 'README.md'), 'changed\n');
  return { repo, marks };
}

test('hardened git runs no repository hook; control: plain git does', () => {
  const plain = booby();
  execFileSync('git', [...identity, 'commit', '-qam', 'x'], { cwd: plain.repo });
  expect(existsSync(join(plain.marks, 'hook-ran'))).toBe(true);

  const hardened = booby();
  execFileSync('git', [...hardenedGitArgs(), ...identity, 'commit', '-qam', 'x'], { cwd: hardened.repo, env: gitHardeningEnv() });
  expect(existsSync(join(hardened.marks, 'hook-ran'))).toBe(false);
});

test('hardened diff runs no external diff and gives a plain patch; control: plain git diff does run it', () => {
  const plain = booby();
  execFileSync('git', ['diff'], { cwd: plain.repo });
  expect(existsSync(join(plain.marks, 'extdiff-ran'))).toBe(true);

  const hardened = booby();
  const patch = execFileSync('git', [...hardenedGitArgs(), 'diff', ...HARDENED_DIFF_FLAGS], {
    cwd: hardened.repo,
    env: gitHardeningEnv(),
    encoding: 'utf8',
  });
  expect(existsSync(join(hardened.marks, 'extdiff-ran'))).toBe(false);
  expect(patch).toContain('--- a/README.md\n+++ b/README.md');
});

test('inherited GIT_* variables cannot redirect git to another repository', () => {
  const repo = makeRepo();
  const other = makeRepo();
  const env = gitHardeningEnv({
    ...process.env,
    GIT_DIR: join(other, '.git'),
    GIT_WORK_TREE: other,
    GIT_EXTERNAL_DIFF: '/bin/false',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
  });
  expect(Object.keys(env).filter((k) => ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_EXTERNAL_DIFF', 'GIT_ASKPASS', 'SSH_ASKPASS'].includes(k))).toEqual([]);
  expect(env).toMatchObject({ GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', GIT_PAGER: 'cat' });
  const top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: repo, env, encoding: 'utf8' }).trim();
  expect(top).toBe(repo);
});
