/**
 * The call a turn is running right now. A turn runs its calls in its own activity
 * (activities/run-ahead.ts), so the workflow — and its status query — hears of a command only when
 * it ends; the activity says what it runs in its heartbeat details, which the server keeps with
 * the pending activity (the Web UI shows them too).
 */
import type { WorkflowHandle } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import type { RunningCall } from '../shared/contracts.js';

const isRunning = (v: unknown): v is RunningCall =>
  typeof v === 'object' && v !== null && typeof (v as RunningCall).running === 'string' && typeof (v as RunningCall).turn === 'number';

export async function runningCall(handle: WorkflowHandle): Promise<RunningCall | undefined> {
  const d = await handle.describe();
  const converter = handle.client.options.loadedDataConverter;
  for (const a of d.raw.pendingActivities ?? []) {
    const payloads = a.heartbeatDetails?.payloads;
    if (a.activityType?.name !== 'agentTurn' || !payloads?.length) continue;
    const v = await decodeFromPayloadsAtIndex<unknown>(converter, 0, payloads).catch(() => undefined);
    if (isRunning(v)) return { running: v.running.slice(0, 300), turn: v.turn };
  }
  return undefined;
}
