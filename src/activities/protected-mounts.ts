/**
 * The paths of a run's worktree that every command sees read-only: the protected set (tests and
 * their fixtures, runner configuration, check definitions, CI, `.git`, `.kiln`) as the base commit
 * has it. The policy's reading of a command decides when to ask a person; this is what makes a
 * write it misread fail anyway (EROFS). New test files come through the edit tool, which the
 * policy judges (write.protected), never through a command.
 */
import { join } from 'node:path';
import { protectedMounts, protectedSet } from '../checks/protected.js';
import { git } from '../git/run.js';
import type { PolicyConfig } from '../policy/types.js';
import type { RunRecord } from '../store/run-files.js';

/** per run and base, for a record made before prepare kept them: the base's files do not change under a run */
const cache = new Map<string, Promise<string[]>>();
const MAX_CACHED = 256;

/** The worktree-relative paths to hold read-only, from the base commit's files. */
export async function protectedPathsAtBase(
  repo: string,
  base: string,
  checks: string[],
  config: Pick<PolicyConfig, 'protected' | 'unprotect'>,
  pinned: string[],
): Promise<string[]> {
  const files = (await git(repo, ['ls-tree', '-r', '-z', '--name-only', base])).split('\0').filter(Boolean);
  return protectedMounts(protectedSet(config.protected, checks, { unprotect: config.unprotect, pinned }), files);
}

export function protectedPaths(rec: RunRecord, config: Pick<PolicyConfig, 'protected' | 'unprotect'>): Promise<string[]> {
  if (rec.input.allowTestEdits) return Promise.resolve([]);
  if (rec.protectedPaths) return Promise.resolve(rec.protectedPaths.map((rel) => join(rec.worktree, rel)));
  const key = `${rec.input.runId}\0${rec.baseCommit}\0${rec.worktree}`;
  let p = cache.get(key);
  if (!p) {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    p = protectedPathsAtBase(rec.input.repo, rec.baseCommit, rec.checks, config, rec.input.protect ?? []).then((rels) =>
      rels.map((rel) => join(rec.worktree, rel)),
    );
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}
