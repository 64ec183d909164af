/**
 * The look after a command reuses the look before's changed paths when the command changed
 * nothing; a command that did change something is looked at afresh.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { snapshotWorktree } from '../../../src/activities/snapshot.js';
import { git, repoWith } from '../../helpers/repo.js';

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
});
