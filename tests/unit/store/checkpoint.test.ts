/**
 * The per-turn checkpoint keeps its index across turns: each checkpoint must still be exactly
 * the worktree's changes against the base (new, edited, deleted, reverted files), equal to the
 * one-shot diff the finalizer takes, and a worktree that did not change reuses the last patch.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointDiff, diffAgainstBase } from '../../../src/store/diff.js';
import { git, repoWith } from '../../helpers/repo.js';

function setup() {
  const repo = repoWith({ 'a.txt': 'one\n', 'b.txt': 'bee\n', 'src/c.js': 'export const c = 1;\n' });
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const scratch = mkdtempSync(join(tmpdir(), 'kiln-ckpt-'));
  const both = async () => ({ kept: await checkpointDiff(repo, base, scratch), fresh: await diffAgainstBase(repo, base, join(scratch, 'fresh')) });
  return { repo, base, scratch, both };
}

describe('checkpoint with a kept index', () => {
  it('follows every kind of change turn after turn, equal to a fresh diff each time', async () => {
    const s = setup();
    let r = await s.both();
    expect(r.kept.patch).toBe('');
    expect(r.fresh).toBe('');

    writeFileSync(join(s.repo, 'a.txt'), 'two\n');
    writeFileSync(join(s.repo, 'new.txt'), 'fresh file\n');
    r = await s.both();
    expect(r.kept.reused).toBe(false);
    expect(r.kept.patch).toContain('+two');
    expect(r.kept.patch).toContain('+fresh file');
    expect(r.kept.patch).toBe(r.fresh);

    // same size, same second: only the content tells the change apart
    writeFileSync(join(s.repo, 'a.txt'), 'six\n');
    rmSync(join(s.repo, 'b.txt'));
    r = await s.both();
    expect(r.kept.patch).toContain('+six');
    expect(r.kept.patch).toContain('deleted file mode');
    expect(r.kept.patch).toBe(r.fresh);

    // back to the base: the checkpoint is empty again
    writeFileSync(join(s.repo, 'a.txt'), 'one\n');
    writeFileSync(join(s.repo, 'b.txt'), 'bee\n');
    rmSync(join(s.repo, 'new.txt'));
    r = await s.both();
    expect(r.kept.patch).toBe('');
    expect(r.fresh).toBe('');
  });

  it('an unchanged worktree reuses the last patch; a changed one does not', async () => {
    const s = setup();
    writeFileSync(join(s.repo, 'src/c.js'), 'export const c = 2;\n');
    const first = await checkpointDiff(s.repo, s.base, s.scratch);
    const again = await checkpointDiff(s.repo, s.base, s.scratch);
    expect(again).toEqual({ patch: first.patch, reused: true });
    writeFileSync(join(s.repo, 'src/c.js'), 'export const c = 3;\n');
    const changed = await checkpointDiff(s.repo, s.base, s.scratch);
    expect(changed.reused).toBe(false);
    expect(changed.patch).toContain('+export const c = 3;');
  });

  it("leaves the worktree's own index alone", async () => {
    const s = setup();
    writeFileSync(join(s.repo, 'new.txt'), 'untracked\n');
    await checkpointDiff(s.repo, s.base, s.scratch);
    expect(git(s.repo, 'status', '--porcelain')).toBe('?? new.txt\n');
  });
});
