/**
 * What a command changed in the worktree: the worktree as a git tree before and after, through an
 * index of the run's own (kept between commands, so git re-hashes only what changed). Ignored
 * files are not changes: they never reach the patch or the verified tree either.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { hardenedGit } from '../git/run.js';
import { runExcludePathspecs } from './clutter.js';
import { treeChanges } from './verify-tree.js';

/** At most this many paths go back to the workflow (history); the count says how many there were. */
export const MAX_CHANGED_PATHS = 50;

export async function snapshotTree(worktree: string, base: string, stateDir: string): Promise<string> {
  const index = join(stateDir, 'snapshot.index');
  await mkdir(dirname(index), { recursive: true });
  const g = await hardenedGit(worktree, { indexFile: index });
  if (!existsSync(index)) await g.run(['read-tree', base]);
  await g.run(['add', '-A', '--', '.', ...(await runExcludePathspecs(stateDir))]);
  return (await g.run(['write-tree'])).trim();
}

export async function pathsChangedBetween(worktree: string, before: string, after: string): Promise<string[]> {
  if (before === after) return [];
  return (await treeChanges(worktree, before, after)).map((c) => c.path);
}
