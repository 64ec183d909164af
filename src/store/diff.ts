/**
 * The run's changes against its base commit, as the patch and the changed-file list read them:
 * the activities (checkpoint, finalize) and the client (`kiln diff` on a live run) take the same
 * diff, so tool clutter and nested repositories are left out the same way for both.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { git, hardenedGit } from '../git/run.js';
import { redact } from '../redact/index.js';
import { DEFAULT_EXCLUDES, dropClutter, excludePathspecs } from './clutter.js';
import { dropNested, stageWorktree } from './nested-repos.js';
import { readJson, writeJsonAtomic, type RunRecord } from './run-files.js';

/**
 * Runs git against a throwaway index holding the base plus every worktree change (new files
 * included), so the worktree's own index is never disturbed. Tool clutter is never added: an
 * excluded path keeps its base content in that index, so it is in no patch and no changed list.
 * The list is the run record's (beside the scratch index); a run without one gets the defaults.
 */
async function againstBase<T>(
  worktree: string,
  base: string,
  scratchDir: string,
  fn: (g: (args: readonly string[]) => Promise<string>) => Promise<T>,
): Promise<T> {
  await mkdir(scratchDir, { recursive: true });
  const index = join(scratchDir, `index-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  const exclude = (await readJson<RunRecord>(join(scratchDir, 'run.json')).catch(() => undefined))?.exclude ?? DEFAULT_EXCLUDES;
  try {
    const hg = await hardenedGit(worktree, { indexFile: index });
    const g = hg.run;
    await g(['read-tree', base]);
    const nested = new Set<string>();
    await stageWorktree(hg, worktree, base, nested, excludePathspecs(exclude));
    await dropNested(hg, worktree, base, (await g(['write-tree'])).trim(), nested);
    return await fn(g);
  } finally {
    await rm(index, { force: true });
  }
}

/**
 * The per-turn checkpoint: the same patch as diffAgainstBase, at a cost that follows the changed
 * files rather than the repo. Its index is kept in the run's state dir across turns, so `add -A`
 * re-hashes only files whose stat changed (a fresh index re-hashes every file: 636–745 ms on a
 * 50,000-file repo); when the resulting tree is the one the last checkpoint saw, its patch is
 * reused without a diff. Only the checkpoint uses this index: `kiln diff` and the finalizer may
 * run beside it and keep their throwaway ones, so no two gits share an index.lock.
 */
export async function checkpointDiff(
  worktree: string,
  base: string,
  scratchDir: string,
  /** the worktree's tree as the last command left it (snapshot.ts), when nothing changed it since */
  known?: string,
): Promise<{ patch: string; reused: boolean }> {
  await mkdir(scratchDir, { recursive: true });
  const index = join(scratchDir, `checkpoint-index-${base}`);
  const memo = join(scratchDir, 'checkpoint-last.json');
  if (known) {
    // a command that changed nothing (most of them) leaves the last checkpoint as it was: no git;
    // one that changed files already made the tree, so only the diff is left to take
    const last = await readJson<{ base: string; tree: string; patch: string }>(memo);
    if (last && last.base === base && last.tree === known) return { patch: last.patch, reused: true };
    const patch = redact(await git(worktree, ['diff', '--binary', '--no-color', base, known]));
    await writeJsonAtomic(memo, { base, tree: known, patch });
    return { patch, reused: false };
  }
  const exclude = (await readJson<RunRecord>(join(scratchDir, 'run.json')).catch(() => undefined))?.exclude ?? DEFAULT_EXCLUDES;
  const hg = await hardenedGit(worktree, { indexFile: index });
  const g = hg.run;
  if (!existsSync(index)) await g(['read-tree', base]);
  // clutter taken back out after, not kept out by pathspecs: those cost ~4x the add on a big repo
  const nested = new Set<string>();
  await stageWorktree(hg, worktree, base, nested);
  let tree = (await g(['write-tree'])).trim();
  const { dropped } = await dropNested(hg, worktree, base, tree, nested);
  if ((await dropClutter(g, base, tree, exclude)) || dropped) tree = (await g(['write-tree'])).trim();
  const last = await readJson<{ base: string; tree: string; patch: string }>(memo);
  if (last && last.base === base && last.tree === tree) return { patch: last.patch, reused: true };
  const patch = redact(await g(['diff', '--cached', '--binary', '--no-color', base]));
  await writeJsonAtomic(memo, { base, tree, patch });
  return { patch, reused: false };
}

/** The worktree's changes against the base, as a patch that applies with `git apply`. */
export async function diffAgainstBase(worktree: string, base: string, scratchDir: string): Promise<string> {
  return againstBase(worktree, base, scratchDir, async (g) => redact(await g(['diff', '--cached', '--binary', '--no-color', base])));
}

export async function changedFiles(worktree: string, base: string, scratchDir: string): Promise<string[]> {
  return againstBase(worktree, base, scratchDir, async (g) => (await g(['diff', '--cached', '--name-only', '--no-renames', base])).split('\n').filter(Boolean));
}
