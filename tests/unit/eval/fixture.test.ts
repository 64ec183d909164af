import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeFixtureRepo } from '../../../src/eval/fixture.js';
import { sourceCacheDir, type TaskSource } from '../../../src/eval/source.js';
import type { EvalTask, Mutation } from '../../../src/eval/types.js';
import { git } from '../../helpers/repo.js';

const SOURCE: TaskSource = { kind: 'npm', spec: 'tiny-lib@1.0.0', integrity: 'sha512-AAAA' };
const LIB = "'use strict';\nfunction add(a, b) {\n  return a + b;\n}\nfunction sub(a, b) {\n  return a - b;\n}\nmodule.exports = { add, sub };\n";

/** A fetched package as the cache holds it, so these tests need no registry. */
function seedCache(home: string, src: TaskSource, files: Record<string, string>): void {
  const key = join(sourceCacheDir({ KILN_HOME: home }), src.kind, src.spec);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(join(key, 'tree', f, '..'), { recursive: true });
    writeFileSync(join(key, 'tree', f), text);
  }
  writeFileSync(join(key, 'source.json'), JSON.stringify({ integrity: src.integrity }));
}

function task(over: Partial<EvalTask>): EvalTask {
  return {
    name: 'fix-it',
    kind: 'bugfix',
    goal: 'g',
    dir: '/nowhere',
    expectedFiles: [],
    tests: [],
    checks: [],
    setup: [],
    budgets: {},
    expect: { outcome: 'succeeded' },
    mutations: [],
    ...over,
  };
}

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'kiln-fixture-home-'));
  vi.stubEnv('KILN_HOME', home);
  seedCache(home, SOURCE, { 'index.js': LIB, 'test.js': 'require("./index")\n', 'package.json': '{"name":"tiny-lib"}\n' });
});
afterEach(() => vi.unstubAllEnvs());

const plantSub: Mutation = { file: 'index.js', find: '  return a - b;', replace: '  return b - a;' };

describe('makeFixtureRepo with a source', () => {
  it('commits the fetched package with the bug planted as the base, the task files laid over it', async () => {
    const overlay = mkdtempSync(join(tmpdir(), 'kiln-overlay-'));
    writeFileSync(join(overlay, '.gitignore'), 'node_modules/\n');
    const repo = await makeFixtureRepo(task({ source: SOURCE, repoDir: overlay, mutations: [plantSub] }));
    expect(readFileSync(join(repo, 'index.js'), 'utf8')).toContain('  return b - a;');
    expect(readFileSync(join(repo, 'index.js'), 'utf8')).not.toContain('a - b');
    // the base commit is the mutated tree, the worktree clean: the inverse edit is the whole fix
    expect(git(repo, 'show', 'HEAD:index.js')).toContain('return b - a;');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(git(repo, 'ls-files').trim().split('\n').sort()).toEqual(['.gitignore', 'index.js', 'package.json', 'test.js']);
  });

  it('leaves the cached package untouched, so the next run plants on a clean copy', async () => {
    await makeFixtureRepo(task({ source: SOURCE, mutations: [plantSub] }));
    const cached = join(sourceCacheDir({ KILN_HOME: home }), 'npm', SOURCE.spec, 'tree', 'index.js');
    expect(readFileSync(cached, 'utf8')).toBe(LIB);
    const again = await makeFixtureRepo(task({ source: SOURCE, mutations: [plantSub] }));
    expect(readFileSync(join(again, 'index.js'), 'utf8')).toContain('return b - a;');
  });

  it('refuses a mutation whose text is not in the package (the task names another version)', async () => {
    await expect(makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: 'index.js', find: 'return a * b;', replace: 'x' }] }))).rejects.toThrow(
      /mutation's text occurs 0 times in index\.js/,
    );
  });

  it('refuses a mutation whose text is found twice', async () => {
    await expect(makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: 'index.js', find: '  return a', replace: '  return 0 +' }] }))).rejects.toThrow(
      /occurs 2 times in index\.js/,
    );
  });

  it('refuses a planted text that is already elsewhere in the file (the fix would be ambiguous); a unique one is planted', async () => {
    await expect(
      makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: 'index.js', find: '  return a - b;', replace: '  return a + b;' }] })),
    ).rejects.toThrow(/replacement occurs 2 times in index\.js once planted/);
    const repo = await makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: 'index.js', find: '  return a - b;', replace: '  return a + b + 0;' }] }));
    expect(readFileSync(join(repo, 'index.js'), 'utf8')).toContain('return a + b + 0;');
  });

  it('refuses a mutation outside the repo or of a missing file', async () => {
    await expect(makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: '../index.js', find: 'a', replace: 'b' }] }))).rejects.toThrow(/outside the repo/);
    await expect(makeFixtureRepo(task({ source: SOURCE, mutations: [{ file: 'lib/none.js', find: 'a', replace: 'b' }] }))).rejects.toThrow(
      /not in the fixture/,
    );
  });

  it('refetches when the task pins another hash than the cached copy was fetched for', async () => {
    // a pin that is no hash at all: the cached copy is dropped and the new fetch refuses before any client runs
    const other = { ...SOURCE, integrity: 'md5-abc' };
    await expect(makeFixtureRepo(task({ source: other }))).rejects.toThrow(/integrity md5-abc: expected sha512/);
    expect(existsSync(join(sourceCacheDir({ KILN_HOME: home }), 'npm', SOURCE.spec))).toBe(false);
  });
});
