/**
 * A run waiting on a full disk: the activity that met it is between two tries (activities/disk.ts),
 * which the workflow does not see; the server keeps the last failure with the pending activity, so
 * the client reads it there and `kiln status` and `follow` can say why nothing moves.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { DISK_FULL_FAILURE } from '../shared/constants.js';

export interface DiskWait {
  /** the activity waiting for space (agentTurn, currentTree, verify, …) */
  activity: string;
  /** the activity's next try, and how many it gets in all */
  attempt: number;
  maxAttempts: number;
  /** when the next try is due, when the server says */
  nextAt?: number;
}

export async function diskWait(handle: WorkflowHandle): Promise<DiskWait | undefined> {
  const d = await handle.describe();
  for (const a of d.raw.pendingActivities ?? []) {
    if (a.lastFailure?.applicationFailureInfo?.type !== DISK_FULL_FAILURE) continue;
    const at = a.nextAttemptScheduleTime ?? a.scheduledTime;
    const next = at?.seconds == null ? undefined : Number(at.seconds) * 1000 + Math.round((at.nanos ?? 0) / 1e6);
    return { activity: a.activityType?.name ?? 'an activity', attempt: a.attempt ?? 1, maxAttempts: a.maximumAttempts ?? 0, ...(next ? { nextAt: next } : {}) };
  }
  return undefined;
}

/** The one line a run waiting on a full disk shows. */
export function diskWaitLine(w: DiskWait, now = Date.now()): string {
  const tries = w.maxAttempts ? `try ${w.attempt} of ${w.maxAttempts}` : `try ${w.attempt}`;
  const when = w.nextAt && w.nextAt > now ? ` in ${Math.ceil((w.nextAt - now) / 1000)} s` : '';
  return `the worker's disk is full: ${w.activity} waits for space (${tries}${when}); free space on the worker to let the run go on`;
}
