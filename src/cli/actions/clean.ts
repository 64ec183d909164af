/**
 * `kiln clean`: removes the worktrees that finished runs kept (blocked and needs-human runs keep
 * theirs for inspection). A run the server still lists as running keeps its worktree whatever
 * its age; a worktree the server knows nothing of is left alone unless asked for.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { removeWorktree } from '../../activities/workspace.js';
import { kilnDir } from '../../shared/paths.js';
import { UsageError } from '../../shared/errors.js';

export interface CleanOptions {
  repo: string;
  olderThanMs?: number;
  dryRun?: boolean;
  /** also remove worktrees of runs the server does not know (e.g. after its database was reset) */
  unknown?: boolean;
}

export interface CleanResult {
  removed: string[];
  kept: { runId: string; why: string }[];
}

export async function cleanWorktrees(client: Client, o: CleanOptions, now = Date.now()): Promise<CleanResult> {
  const repo = resolve(o.repo);
  if (!existsSync(repo)) throw new UsageError(`--repo ${o.repo}: no such directory`);
  const dir = join(kilnDir(repo), 'worktrees');
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  const result: CleanResult = { removed: [], kept: [] };
  for (const runId of names) {
    const wt = join(dir, runId);
    const ageMs = now - statSync(wt).mtimeMs;
    if (o.olderThanMs !== undefined && ageMs < o.olderThanMs) {
      result.kept.push({ runId, why: `younger than --older-than (${Math.round(ageMs / 3600_000)} h old)` });
      continue;
    }
    let status: string;
    try {
      status = (await client.workflow.getHandle(runId).describe()).status.name;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      status = 'UNKNOWN';
    }
    if (status === 'RUNNING') {
      result.kept.push({ runId, why: 'still running' });
      continue;
    }
    if (status === 'UNKNOWN' && !o.unknown) {
      result.kept.push({ runId, why: 'the server does not know this run (add --unknown to remove it too)' });
      continue;
    }
    if (!o.dryRun) await removeWorktree(repo, wt);
    result.removed.push(runId);
  }
  return result;
}
