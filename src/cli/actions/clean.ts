/**
 * `kiln clean`: removes the worktrees that finished runs kept (blocked and needs-human runs keep
 * theirs for inspection), and the pristine checkouts under .kiln/verify that a verification left
 * when its worker was killed and its run then ended without it. A run the server still lists as
 * running keeps both whatever their age; a run the server knows nothing of is left alone unless
 * asked for.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkoutRun, removeCheckout, verifyCheckouts } from '../../activities/verify-tree.js';
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
  /** verification checkouts (`.kiln/verify/NAME`) of ended runs, with the run each belonged to */
  removedCheckouts: { name: string; runId: string }[];
}

export async function cleanWorktrees(client: Client, o: CleanOptions, now = Date.now()): Promise<CleanResult> {
  const repo = resolve(o.repo);
  if (!existsSync(repo)) throw new UsageError(`--repo ${o.repo}: no such directory`);
  const dir = join(kilnDir(repo), 'worktrees');
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  const result: CleanResult = { removed: [], kept: [], removedCheckouts: [] };
  const statuses = new Map<string, Promise<string>>();
  const statusOf = (runId: string) => {
    if (!statuses.has(runId)) statuses.set(runId, runStatus(client, runId));
    return statuses.get(runId)!;
  };
  for (const runId of names) {
    const wt = join(dir, runId);
    const ageMs = now - statSync(wt).mtimeMs;
    if (o.olderThanMs !== undefined && ageMs < o.olderThanMs) {
      result.kept.push({ runId, why: `younger than --older-than (${Math.round(ageMs / 3600_000)} h old)` });
      continue;
    }
    const why = keptWhy(await statusOf(runId), o);
    if (why) {
      result.kept.push({ runId, why });
      continue;
    }
    if (!o.dryRun) await removeWorktree(repo, wt);
    result.removed.push(runId);
  }
  await cleanCheckouts(repo, o, now, statusOf, result);
  return result;
}

/** The verification checkouts whose run has ended: nothing verifies in them any more. */
async function cleanCheckouts(repo: string, o: CleanOptions, now: number, statusOf: (runId: string) => Promise<string>, result: CleanResult): Promise<void> {
  for (const name of await verifyCheckouts(repo)) {
    const runId = checkoutRun(name);
    if (!runId) continue;
    const ageMs = now - statSync(join(kilnDir(repo), 'verify', name)).mtimeMs;
    if (o.olderThanMs !== undefined && ageMs < o.olderThanMs) continue;
    const why = keptWhy(await statusOf(runId), o);
    if (why) {
      result.kept.push({ runId, why: `.kiln/verify/${name}: ${why}` });
      continue;
    }
    if (!o.dryRun) await removeCheckout(repo, name);
    result.removedCheckouts.push({ name, runId });
  }
}

async function runStatus(client: Client, runId: string): Promise<string> {
  try {
    return (await client.workflow.getHandle(runId).describe()).status.name;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    return 'UNKNOWN';
  }
}

/** Why a run's leftovers stay, or undefined when they may go. */
function keptWhy(status: string, o: CleanOptions): string | undefined {
  if (status === 'RUNNING') return 'still running';
  if (status === 'UNKNOWN' && !o.unknown) return 'the server does not know this run (add --unknown to remove it too)';
  return undefined;
}
