/**
 * Work in the user's checkout that is not committed. A run's worktree starts from a commit, so
 * such work is left out unless the user asks for it: then Kiln commits the working tree — HEAD
 * plus tracked changes and untracked files, ignored files and tool clutter not — to a commit of
 * its own, pinned by a ref, and that commit is the run's base. The user's branch, index and files
 * are never touched; patch.diff holds only the run's own changes, to apply on top of their work.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, hardenedGit } from '../git/run.js';
import { excludeList, excludePathspecs } from '../store/clutter.js';
import { dropNested, stageWorktree } from '../store/nested-repos.js';

export interface Uncommitted {
  modified: string[];
  untracked: string[];
}

/** Where the base commit of a run started with --include-uncommitted is kept from git gc. */
export const baseRef = (runId: string) => `refs/kiln/bases/${runId}`;

function pathspecs(exclude: readonly string[]): string[] {
  return ['.', ...excludePathspecs(['.kiln', ...excludeList(exclude)])];
}

export async function uncommittedWork(repo: string, exclude: readonly string[] = []): Promise<Uncommitted> {
  const out = await git(repo, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--', ...pathspecs(exclude)]);
  const res: Uncommitted = { modified: [], untracked: [] };
  for (const entry of out.split('\0').filter(Boolean)) {
    const path = entry.slice(3);
    (entry.startsWith('??') ? res.untracked : res.modified).push(path);
  }
  return res;
}

/** The one-line warning `kiln run` prints when the checkout has work the run will not see. */
export function uncommittedWarning(repo: string, u: Uncommitted, quote: (s: string) => string): string | undefined {
  const n = u.modified.length + u.untracked.length;
  if (!n) return undefined;
  const list = (paths: string[]) => paths.slice(0, 3).join(', ') + (paths.length > 3 ? `, +${paths.length - 3} more` : '');
  const parts = [u.modified.length ? `modified: ${list(u.modified)}` : '', u.untracked.length ? `untracked: ${list(u.untracked)}` : ''].filter(Boolean);
  return `warning: ${n} uncommitted change${n === 1 ? '' : 's'} in ${quote(repo)} will not be in the run (${parts.join('; ')}); it starts from the last commit. Commit them, or pass --include-uncommitted to start from the working tree as it is`;
}

/**
 * Commits the working tree (through a scratch index: the user's index stays as it is) and pins
 * it under refs/kiln/bases/RUN. A ref that is already there belongs to an earlier start of the
 * same run id and is kept, so attaching again never moves a running run's base.
 */
export async function snapshotWorkingTree(repo: string, runId: string, exclude: readonly string[] = []): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), 'kiln-base-'));
  const g = await hardenedGit(repo, { indexFile: join(scratch, 'index'), identity: { name: 'Kiln', email: 'kiln@localhost' } });
  try {
    const existing = await g.run(['rev-parse', '--verify', '--quiet', `${baseRef(runId)}^{commit}`]).catch(() => '');
    if (existing.trim()) return existing.trim();
    const head = (await g.run(['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
    await g.run(['read-tree', head]);
    const nested = new Set<string>();
    await stageWorktree(g, repo, head, nested, pathspecs(exclude));
    let tree = (await g.run(['write-tree'])).trim();
    if ((await dropNested(g, repo, head, tree, nested)).dropped) tree = (await g.run(['write-tree'])).trim();
    const commit = (await g.run(['commit-tree', tree, '-p', 'HEAD', '-m', `kiln: uncommitted work at the start of ${runId}`])).trim();
    await g.run(['update-ref', baseRef(runId), commit, '']);
    return commit;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * At `kiln run`: with --include-uncommitted the run's base becomes a commit of the working tree;
 * without it, uncommitted work gets a warning on stderr. Returns the note to print, if any.
 */
export async function baseForRun(
  input: { repo: string; runId: string; base?: string },
  includeUncommitted: boolean,
  exclude: readonly string[],
  quote: (s: string) => string,
): Promise<{ base?: string; note?: string; warning?: string }> {
  const u = await uncommittedWork(input.repo, exclude);
  const n = u.modified.length + u.untracked.length;
  if (!includeUncommitted) return { base: input.base, warning: uncommittedWarning(input.repo, u, quote) };
  if (!n) return { base: input.base, note: 'no uncommitted changes to include: the run starts from HEAD' };
  const base = await snapshotWorkingTree(input.repo, input.runId, exclude);
  return {
    base,
    note: `including ${n} uncommitted change${n === 1 ? '' : 's'}: the run starts from ${base.slice(0, 10)} (HEAD plus the working tree, kept as ${baseRef(input.runId)}); patch.diff is against it`,
  };
}
