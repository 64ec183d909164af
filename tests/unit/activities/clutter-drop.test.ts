/**
 * The look after a command and the per-turn checkpoint add everything and then take the clutter
 * back out (exclude pathspecs made `add -A` ~4x slower on a big repo). What they end with must be
 * exactly what `add -A` with the exclude pathspecs gives — the tree the verifier and the final
 * patch are built from — whatever the clutter: new, tracked and changed, tracked and deleted,
 * deep, in the hundreds, with look-alike names beside it and a list of the run's own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_EXCLUDES, excludeList, excludePathspecs, mayHoldClutter } from '../../../src/store/clutter.js';
import { snapshotWorktree } from '../../../src/activities/snapshot.js';
import { checkpointDiff } from '../../../src/store/diff.js';
import { git, repoWith, treeThroughFreshIndex, writeFiles } from '../../helpers/repo.js';

/** every git command the looks ran, through the hardened git they use */
const ran = vi.hoisted(() => [] as string[][]);
vi.mock('../../../src/git/run.js', async (importOriginal) => (await import('../../helpers/counting-git.js')).countingGit(importOriginal, ran));

function messyRepo(): { repo: string; base: string } {
  const repo = repoWith(
    {
      'app.py': 'x = 1\n',
      'tracked.pyc': 'committed bytecode\n',
      'old.pyo': 'committed, then deleted\n',
      '__pycache__/keep.txt': 'committed under a clutter name\n',
      'docs/guide.md': '# guide\n',
    },
    'kiln-clutter-drop-',
  );
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  rmSync(join(repo, 'old.pyo'));
  writeFiles(repo, {
    'app.py': 'x = 2\n',
    'tracked.pyc': 'rewritten by a test run\n',
    '__pycache__/keep.txt': 'changed by a tool\n',
    '__pycache__/new.pyc': 'b',
    'src/pkg/__pycache__/mod.cpython-311.pyc': 'b',
    'src/pkg/__pycache__/notes.txt': 'inside a clutter directory',
    'src/.pytest_cache/v/cache/lastfailed': '{}',
    '.coverage': 'sqlite',
    'reports/.coverage.host1': 'sqlite',
    'web/node_modules/.cache/babel/x.json': '{}',
    // look-alikes: real files the model may have written
    'src/my__pycache__.txt': 'not clutter',
    'report.coverage': 'not clutter',
    'a.pyc.txt': 'not clutter',
    'pycache/x.py': 'not clutter',
    'htmlcovers/readme.md': 'not clutter',
    ...Object.fromEntries(Array.from({ length: 1200 }, (_, i) => [`gen/__pycache__/m${i}.pyc`, String(i)])),
  });
  return { repo, base };
}

describe('adding everything, then taking the clutter back out', () => {
  it.each([
    ['the defaults', [...DEFAULT_EXCLUDES]],
    ['a run list with a negated default and names of its own', excludeList(['!htmlcov', 'reports', '*.txt', 'gen'])],
  ])('gives the exclude pathspecs’ tree, in the look after a command and in the checkpoint (%s)', async (_label, list) => {
    const { repo, base } = messyRepo();
    const state = mkdtempSync(join(tmpdir(), 'kiln-clutter-state-'));
    writeFileSync(join(state, 'run.json'), JSON.stringify({ exclude: list }));
    const want = treeThroughFreshIndex(repo, base, excludePathspecs(list));
    const wantChanged = git(repo, 'diff-tree', '-r', '--name-only', '--no-renames', base, want).split('\n').filter(Boolean);
    expect(wantChanged).toContain('app.py');
    if (!list.includes('*.txt')) expect(wantChanged).toEqual(expect.arrayContaining(['src/my__pycache__.txt', 'report.coverage', 'a.pyc.txt', 'pycache/x.py']));

    const look = await snapshotWorktree(repo, base, state, { changed: true });
    expect(look.tree).toBe(want);
    expect(look.changed).toEqual(wantChanged);
    // the checkpoint's patch is the diff from the base to that same tree
    const { patch } = await checkpointDiff(repo, base, state);
    expect(patch).toBe(git(repo, 'diff', '--binary', '--no-color', base, want));
  });

  it('with the clutter still there, the next look costs one `add -A`, and a real change after it is seen', async () => {
    const { repo, base } = messyRepo();
    const state = mkdtempSync(join(tmpdir(), 'kiln-clutter-state-'));
    const first = await snapshotWorktree(repo, base, state, { changed: true });
    ran.length = 0;
    const again = await snapshotWorktree(repo, base, state, { changed: true, seen: first });
    expect(again).toEqual(first);
    expect(ran).toEqual([['add', '-A', '--', '.']]);

    writeFiles(repo, { 'docs/guide.md': '# guide, edited\n', 'src/pkg/__pycache__/other.pyc': 'more clutter' });
    const third = await snapshotWorktree(repo, base, state, { changed: true, seen: again });
    expect(third.tree).toBe(treeThroughFreshIndex(repo, base, excludePathspecs(DEFAULT_EXCLUDES)));
    expect(third.changed).toContain('docs/guide.md');
    expect(third.changed?.some((p) => p.includes('other.pyc'))).toBe(false);
  });

  it('control: a change with no clutter near it asks git nothing more than before', async () => {
    const repo = repoWith({ 'a.ts': 'export const a = 1;\n' }, 'kiln-clutter-drop-');
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const state = mkdtempSync(join(tmpdir(), 'kiln-clutter-state-'));
    writeFiles(repo, { 'a.ts': 'export const a = 2;\n' });
    ran.length = 0;
    const look = await snapshotWorktree(repo, base, state, { changed: true });
    expect(look.changed).toEqual(['a.ts']);
    // ls-tree: the base's gitlinks (nested-repos.ts), once per base
    expect(ran.map((a) => a[0])).toEqual(['read-tree', 'ls-tree', 'add', 'write-tree', 'diff-tree']);
  });
});

describe('mayHoldClutter, the guard in front of git', () => {
  it('never says no where git’s pathspecs would match', () => {
    expect(mayHoldClutter(['src/__pycache__/a.pyc'], ['__pycache__'])).toBe(true);
    expect(mayHoldClutter(['x/Y.PYC'], ['*.pyc'])).toBe(true);
    expect(mayHoldClutter(['r/.coverage.host'], ['.coverage.*'])).toBe(true);
    expect(mayHoldClutter(['a/node_modules/.cache/b'], ['node_modules/.cache'])).toBe(true);
    // a bracket expression or an escape: every path is a candidate
    expect(mayHoldClutter(['anything'], ['*.py[cd]'])).toBe(true);
    expect(mayHoldClutter(['anything'], ['a\\*b'])).toBe(true);
  });

  it('control: says no for paths that hold none of the names', () => {
    expect(mayHoldClutter(['src/a.ts', 'docs/readme.md'], [...DEFAULT_EXCLUDES])).toBe(false);
    expect(mayHoldClutter([], ['*'])).toBe(false);
  });
});
