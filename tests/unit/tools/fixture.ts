import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' });
}

/** A fresh directory holding `<name>/` (the repo) so siblings like `<name>-evil` can sit beside it. */
export function tempRepo(files: Record<string, string>, name = 'repo'): { dir: string; parent: string } {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-tools-'));
  const dir = path.join(parent, name);
  fs.mkdirSync(dir);
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'fixture', '--allow-empty');
  return { dir, parent };
}

export function removeTemp(parent: string): void {
  fs.rmSync(parent, { recursive: true, force: true });
}
