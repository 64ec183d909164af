/** Temporary git repos for tests, made from the bundled example or from given files. */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trustRepo } from '../../src/policy/trust.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const EXAMPLE = join(ROOT, 'examples', 'revoked-session');
export const EXAMPLE_SCRIPT = join(ROOT, 'examples', 'scripts', 'revoked-session.json');

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

export function git(repo: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: repo, env: GIT_ENV, encoding: 'utf8' });
}

/**
 * The worktree as a tree through a fresh index of its own (the worktree's index untouched): the
 * reference the looks and checkpoints are held to. `pathspecs` limit what `add -A` takes.
 */
export function treeThroughFreshIndex(worktree: string, base: string, pathspecs: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-fresh-index-'));
  const g = (...args: string[]) => execFileSync('git', args, { cwd: worktree, env: { ...GIT_ENV, GIT_INDEX_FILE: join(dir, 'index') }, encoding: 'utf8' });
  try {
    g('read-tree', base);
    g('add', '-A', '--', '.', ...pathspecs);
    return g('write-tree').trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function commitAll(repo: string, message = 'base'): void {
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', message);
}

/**
 * The KILN_HOME that in-process workers (and worker processes spawned with this environment)
 * read in tests: a fresh one, so no test reads or writes the developer's own ~/.kiln.
 */
export function testKilnHome(): string {
  process.env.KILN_HOME ??= mkdtempSync(join(tmpdir(), 'kiln-test-home-'));
  return process.env.KILN_HOME;
}

/**
 * A fresh git copy of the bundled example, trusted (as `kiln demo` trusts it) in `trustIn`, so
 * its AGENTS.md checks apply; an untrusted copy would run with no checks.
 */
export function exampleRepo(prefix = 'kiln-test-', trustIn: string = testKilnHome()): string {
  const repo = join(mkdtempSync(join(tmpdir(), prefix)), 'repo');
  cpSync(EXAMPLE, repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  commitAll(repo, 'example');
  trustRepo(repo, trustIn);
  return repo;
}

/** Files under `root`, their directories made as needed. */
export function writeFiles(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
}

export function repoWith(files: Record<string, string>, prefix = 'kiln-test-'): string {
  return repoAt(join(mkdtempSync(join(tmpdir(), prefix)), 'repo'), files);
}

/** A git repo at `repo` (made) of `files`, committed on main. */
export function repoAt(repo: string, files: Record<string, string | Uint8Array>): string {
  writeFiles(repo, files);
  git(repo, 'init', '-q', '-b', 'main');
  commitAll(repo, 'base');
  return repo;
}

/** A one-bug repo (greet drops the comma) with a node:test test that fails on the base. */
export const GREET_FILES = {
  'src/greet.js': "'use strict';\nfunction greet(name) {\n  return 'Hello ' + name;\n}\nmodule.exports = { greet };\n",
  'test/greet.test.js':
    "const test = require('node:test');\nconst assert = require('node:assert');\nconst { greet } = require('../src/greet');\ntest('greets with a comma', () => assert.equal(greet('Ada'), 'Hello, Ada'));\n",
};

export function writeScript(dir: string, name: string, script: unknown): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(script, null, 2));
  return file;
}
