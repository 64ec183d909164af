/**
 * The verified tree: the base plus the model's changes as git sees them, protected paths back
 * from the base, nothing ignored crossing over — and the model's worktree left as it was.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { protectedSet } from '../../../src/checks/protected.js';
import { buildVerifyTree, pristineCheckout, removeLeftoverCheckouts, type VerifyTree } from '../../../src/activities/verify-tree.js';
import { git, repoWith } from '../../helpers/repo.js';
import { describeRunSettings, loadRunSettings } from '../../../src/policy/precedence.js';
import { trustRepo } from '../../../src/policy/trust.js';

const PKG = JSON.stringify({ name: 'r', scripts: { test: 'node --test' } }, null, 2);

function setup() {
  const repo = repoWith({
    '.gitignore': 'node_modules/\n',
    'package.json': PKG,
    'src/ring.js': 'module.exports = 1;\n',
    'test.js': "require('node:test')('t', () => {});\n",
  });
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
    writeFileSync(
      join(wt, 'package.json'),
      JSON.stringify({ name: 'r', scripts: { test: 'node --test || true', postinstall: 'x' }, dependencies: { a: '1' } }, null, 2),
    );
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

describe('a repo that releases a protected file by name (.kiln/policy.json "unprotect")', () => {
  function golden() {
    const repo = repoWith({
      '.kiln/policy.json': JSON.stringify({ unprotect: ['tests/fixtures/golden.json'] }),
      'src/fmt.js': 'module.exports = 1;\n',
      'tests/fixtures/golden.json': '{"v":1}\n',
      'tests/fmt.test.js': "require('node:test')('t', () => {});\n",
    });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const wt = join(repo, '..', 'wt');
    git(repo, 'worktree', 'add', '--detach', wt, base);
    writeFileSync(join(wt, 'tests/fixtures/golden.json'), '{"v":2}\n');
    writeFileSync(join(wt, 'tests/fmt.test.js'), '// relaxed\n');
    const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
    return { repo, base, wt, home };
  }
  // what verify does: the run's merged policy, then the protected set from it
  async function verifyWith(g: ReturnType<typeof golden>) {
    const s = await loadRunSettings(g.repo, { home: g.home, approvalMode: 'default', checks: ['npm test'] });
    const protect = protectedSet(s.policy.protected, s.checks, { unprotect: s.policy.unprotect });
    tree = await buildVerifyTree({ repo: g.repo, worktree: g.wt, base: g.base, scratchDir: join(g.repo, '..', 'scratch'), label: 't', protect });
    return { s, tree };
  }

  it('trusted: the named fixture is the model’s to change and is verified as changed; the test next to it is still put back', async () => {
    const g = golden();
    try {
      trustRepo(g.repo, g.home);
      const { tree } = await verifyWith(g);
      expect(tree.protectedChanged).toEqual(['tests/fmt.test.js']);
      expect(readFileSync(join(tree.dir, 'tests/fixtures/golden.json'), 'utf8')).toBe('{"v":2}\n');
      expect(readFileSync(join(tree.dir, 'tests/fmt.test.js'), 'utf8')).toContain("require('node:test')");
    } finally {
      rmSync(g.home, { recursive: true, force: true });
    }
  });

  it('untrusted: the release is ignored, said at run start, and the fixture change fails verification', async () => {
    const g = golden();
    try {
      const { s, tree } = await verifyWith(g);
      expect(describeRunSettings(s).join('\n')).toContain(
        'IGNORED .kiln/policy.json unprotect ["tests/fixtures/golden.json"] (they stay protected): ignored, the repo\'s configuration is not trusted',
      );
      expect(tree.protectedChanged.sort()).toEqual(['tests/fixtures/golden.json', 'tests/fmt.test.js']);
      expect(readFileSync(join(tree.dir, 'tests/fixtures/golden.json'), 'utf8')).toBe('{"v":1}\n');
    } finally {
      rmSync(g.home, { recursive: true, force: true });
    }
  });

  it('a run-level --protect (an eval task’s tests) outranks the release', async () => {
    const g = golden();
    try {
      trustRepo(g.repo, g.home);
      const s = await loadRunSettings(g.repo, { home: g.home, approvalMode: 'default' });
      const p = protectedSet(s.policy.protected, [], { unprotect: s.policy.unprotect, pinned: ['tests/fixtures/**'] });
      expect(p.isProtected('tests/fixtures/golden.json')).toBe(true);
      expect(protectedSet(s.policy.protected, [], { unprotect: s.policy.unprotect }).isProtected('tests/fixtures/golden.json')).toBe(false);
    } finally {
      rmSync(g.home, { recursive: true, force: true });
    }
  });
});

describe('checkouts a killed verification left', () => {
  it("are removed when the run's next verification starts, with their git worktree entries; another run's stay", async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const mine = [
      await pristineCheckout(repo, base, 'run-7-1'),
      await pristineCheckout(repo, base, 'run-7-cf'),
      await pristineCheckout(repo, base, 'run-7-base'),
    ];
    const other = await pristineCheckout(repo, base, 'run-7-2-1');
    const removed = await removeLeftoverCheckouts(repo, 'run-7');
    expect(removed.sort()).toEqual(mine.map((c) => basename(c.dir)).sort());
    for (const c of mine) expect(existsSync(c.dir)).toBe(false);
    expect(existsSync(other.dir)).toBe(true);
    const listed = git(repo, 'worktree', 'list');
    for (const c of mine) expect(listed).not.toContain(c.dir);
    expect(listed).toContain(other.dir);
  });
});
