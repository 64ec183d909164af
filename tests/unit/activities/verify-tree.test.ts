/**
 * The verified tree: the base plus the model's changes as git sees them, protected paths back
 * from the base, nothing ignored crossing over — and the model's worktree left as it was.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { protectedSet } from '../../../src/checks/protected.js';
import { buildVerifyTree, type VerifyTree } from '../../../src/activities/verify-tree.js';
import { git, repoWith } from '../../helpers/repo.js';

const PKG = JSON.stringify({ name: 'r', scripts: { test: 'node --test' } }, null, 2);

function setup() {
  const repo = repoWith({ '.gitignore': 'node_modules/\n', 'package.json': PKG, 'src/ring.js': 'module.exports = 1;\n', 'test.js': "require('node:test')('t', () => {});\n" });
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const wt = join(repo, '..', 'wt');
  git(repo, 'worktree', 'add', '--detach', wt, base);
  return { repo, base, wt };
}

let tree: VerifyTree | undefined;
afterEach(async () => {
  await tree?.remove();
  tree = undefined;
});

describe('buildVerifyTree', () => {
  it('takes the code change, puts the tests, the test script and ignored files back, and leaves the model’s worktree alone', async () => {
    const { repo, base, wt } = setup();
    writeFileSync(join(wt, 'src/ring.js'), 'module.exports = 2;\n');
    writeFileSync(join(wt, 'src/new.js'), 'new\n');
    writeFileSync(join(wt, 'test.js'), '// relaxed\n');
    writeFileSync(join(wt, 'package.json'), JSON.stringify({ name: 'r', scripts: { test: 'node --test || true', postinstall: 'x' }, dependencies: { a: '1' } }, null, 2));
    mkdirSync(join(wt, 'node_modules/.bin'), { recursive: true });
    writeFileSync(join(wt, 'node_modules/.bin/node'), '#!/bin/sh\necho "# pass 4"\n');

    tree = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: join(repo, '..', 'scratch'), label: 't', protect: protectedSet([], ['npm test']) });
    expect(tree.changed.sort()).toEqual(['package.json', 'src/new.js', 'src/ring.js', 'test.js']);
    expect(tree.protectedChanged.sort()).toEqual(['package.json (scripts)', 'test.js']);
    expect(readFileSync(join(tree.dir, 'src/ring.js'), 'utf8')).toBe('module.exports = 2;\n');
    expect(readFileSync(join(tree.dir, 'src/new.js'), 'utf8')).toBe('new\n');
    expect(readFileSync(join(tree.dir, 'test.js'), 'utf8')).toContain("require('node:test')");
    const pkg = JSON.parse(readFileSync(join(tree.dir, 'package.json'), 'utf8'));
    expect(pkg).toEqual({ name: 'r', scripts: { test: 'node --test' }, dependencies: { a: '1' } });
    expect(existsSync(join(tree.dir, 'node_modules'))).toBe(false);
    expect(tree.tree).toMatch(/^[0-9a-f]{40}$/);
    expect(tree.tree).not.toBe(tree.modelTree);
    // the model's worktree: exactly as left
    expect(readFileSync(join(wt, 'test.js'), 'utf8')).toBe('// relaxed\n');
    expect(existsSync(join(wt, 'node_modules/.bin/node'))).toBe(true);
    expect(git(wt, 'status', '--porcelain')).toContain('test.js');
  });

  it('keeps out a file the base ignores even when the model un-ignores it', async () => {
    const { repo, base, wt } = setup();
    writeFileSync(join(wt, '.gitignore'), '');
    mkdirSync(join(wt, 'node_modules/.bin'), { recursive: true });
    writeFileSync(join(wt, 'node_modules/.bin/node'), 'fake\n');
    tree = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: join(repo, '..', 'scratch'), label: 't', protect: protectedSet([], []) });
    expect(tree.ignoredAdded).toEqual(['node_modules/.bin/node']);
    expect(existsSync(join(tree.dir, 'node_modules/.bin/node'))).toBe(false);
  });

  it('control: an honest code change verifies as the same tree the model left', async () => {
    const { repo, base, wt } = setup();
    writeFileSync(join(wt, 'src/ring.js'), 'module.exports = 3;\n');
    tree = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: join(repo, '..', 'scratch'), label: 't', protect: protectedSet([], ['npm test']) });
    expect(tree.protectedChanged).toEqual([]);
    expect(tree.ignoredAdded).toEqual([]);
    expect(tree.tree).toBe(tree.modelTree);
  });
});
