/**
 * The look after a command reuses the look before's changed paths when the command changed
 * nothing; a command that did change something is looked at afresh. The tree of an index whose
 * content a write-tree saw already is not asked of git again, and is always the tree git makes.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { execFileSync } from 'node:child_process';
import { snapshotWorktree } from '../../../src/activities/snapshot.js';
import { git, repoWith } from '../../helpers/repo.js';

/** every git command the looks ran, through the hardened git they use */
const ran = vi.hoisted(() => [] as string[][]);
vi.mock('../../../src/git/run.js', async (importOriginal) => (await import('../../helpers/counting-git.js')).countingGit(importOriginal, ran));
const writeTrees = () => ran.filter((a) => a[0] === 'write-tree').length;

describe('the look after a command', () => {
  it('keeps the paths of an unchanged tree and finds those of a changed one', async () => {
    const repo = repoWith({ 'a.txt': 'one\n', 'b.txt': 'bee\n' });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const state = mkdtempSync(join(tmpdir(), 'kiln-seen-'));
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    const before = await snapshotWorktree(repo, base, state, { changed: true });
    expect(before.changed).toEqual(['a.txt']);

    const same = await snapshotWorktree(repo, base, state, { changed: true, seen: before });
    expect(same).toEqual(before);
    // taken from the look before, not asked of git again (a pure function of base and tree)
    const told = await snapshotWorktree(repo, base, state, { changed: true, seen: { tree: before.tree, changed: ['as seen'] } });
    expect(told.changed).toEqual(['as seen']);

    writeFileSync(join(repo, 'b.txt'), 'changed by the command\n');
    const after = await snapshotWorktree(repo, base, state, { changed: true, seen: before });
    expect(after.tree).not.toBe(before.tree);
    expect(after.changed).toEqual(['a.txt', 'b.txt']);
  });

  it('asks git for the tree only when the index changed, and always has the tree git would make', async () => {
    const repo = repoWith({ 'a.txt': 'one\n', 'b.txt': 'bee\n', 'run.sh': 'echo hi\n' });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const state = mkdtempSync(join(tmpdir(), 'kiln-seen-'));
    // what git makes of the worktree, through an index of its own
    const truth = () => {
      const idx = join(mkdtempSync(join(tmpdir(), 'kiln-truth-')), 'index');
      const env = { ...process.env, GIT_INDEX_FILE: idx };
      const run = (...a: string[]) => execFileSync('git', a, { cwd: repo, env, encoding: 'utf8' }).trim();
      run('read-tree', base);
      run('add', '-A');
      return run('write-tree');
    };
    const look = async () => (await snapshotWorktree(repo, base, state)).tree;
    // files a command wrote a moment ago are "racily clean" to git, which re-reads them and rewrites
    // the index on the next add: the skip is for the files left alone since, as most are (each edit
    // below changes a size: git, like any stat-based look, cannot tell a same-size edit whose
    // mtime was set back into the same second)
    const age = () => {
      const old = Date.now() / 1000 - 3600;
      for (const f of readdirSync(repo)) if (f !== '.git') utimesSync(join(repo, f), old, old);
    };
    age();

    const first = writeTrees();
    expect(await look()).toBe(truth());
    expect(writeTrees()).toBe(first + 1);
    // nothing changed: the same tree, and no write-tree
    expect(await look()).toBe(truth());
    expect(writeTrees()).toBe(first + 1);

    const steps: Array<[string, () => void]> = [
      ['an edit', () => writeFileSync(join(repo, 'a.txt'), 'three\n')],
      ['a new file', () => writeFileSync(join(repo, 'c.txt'), 'sea\n')],
      ['a deletion', () => rmSync(join(repo, 'b.txt'))],
      ['a mode change', () => chmodSync(join(repo, 'run.sh'), 0o755)],
      ['an edit undone', () => writeFileSync(join(repo, 'a.txt'), 'one\n')],
    ];
    for (const [what, change] of steps) {
      change();
      age();
      const n = writeTrees();
      expect(await look(), what).toBe(truth());
      expect(await look(), `${what}, looked at again`).toBe(truth());
      // the change is written into the index once (a tree git makes); the look after it needs none
      expect(writeTrees(), what).toBe(n + 1);
    }
    // another process rewrote the run's index: its checksum is not the one remembered
    execFileSync('git', ['read-tree', base], { cwd: repo, env: { ...process.env, GIT_INDEX_FILE: join(state, 'snapshot.index') } });
    const before = writeTrees();
    expect(await look()).toBe(truth());
    expect(writeTrees()).toBe(before + 1);
  });
});
