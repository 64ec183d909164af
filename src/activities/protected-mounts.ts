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
import type { RunRecord } from './run-files.js';

/** per run and base: the base's files do not change under a run */
const cache = new Map<string, Promise<string[]>>();
const MAX_CACHED = 256;

export function protectedPaths(rec: RunRecord, config: Pick<PolicyConfig, 'protected' | 'unprotect'>): Promise<string[]> {
  if (rec.input.allowTestEdits) return Promise.resolve([]);
  const key = `${rec.input.runId}\0${rec.baseCommit}\0${rec.worktree}`;
  let p = cache.get(key);
  if (!p) {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    p = (async () => {
      const files = (await git(rec.input.repo, ['ls-tree', '-r', '-z', '--name-only', rec.baseCommit])).split('\0').filter(Boolean);
      const set = protectedSet(config.protected, rec.checks, { unprotect: config.unprotect, pinned: rec.input.protect ?? [] });
      return protectedMounts(set, files).map((rel) => join(rec.worktree, rel));
    })();
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}
