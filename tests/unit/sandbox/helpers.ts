import { useSpawner } from '../../../src/process/spawn.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const cleanups: string[] = [];

export function tempDir(prefix: string, base = tmpdir()): string {
  const dir = mkdtempSync(join(base, `kiln-test-${prefix}-`));
  cleanups.push(dir);
  return dir;
}

export function cleanupTempDirs(): void {
  while (cleanups.length) rmSync(cleanups.pop()!, { recursive: true, force: true });
}

export function uniqueMarker(label: string): string {
  return `kiln_${label}_${randomBytes(6).toString('hex')}`;
}

/** Processes on the host whose command line contains the marker (pgrep -f), excluding pgrep itself. */
export function survivors(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-a', '-f', marker], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() !== '');
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Kiln Test', '-c', 'user.email=kiln@example.invalid', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
}

/** A repository with one commit. */
export function makeRepo(base?: string): string {
  const repo = tempDir('repo', base);
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'README.md'), '# fixture\n');
  git(repo, 'add', 'README.md');
  git(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}

// KILN_TEST_SPAWNER=1 runs every sandbox test's commands through the worker's spawner
// (src/process/spawn.ts), as in a worker; through-spawner.test.ts always does for a few.
if (process.env.KILN_TEST_SPAWNER === '1') useSpawner();
