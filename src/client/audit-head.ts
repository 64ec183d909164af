/**
 * Where the run recorded the end of its audit chain: the head each recordAudit returned, kept by
 * the workflow, not state.json (which sits beside audit.jsonl and can be edited with it). An open
 * run (or any run while a worker answers) says it in its status query; otherwise its history
 * holds every recordAudit result, and a continued run's carry holds the head from before.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import type { AuditHead } from '../activities/audit-chain.js';
import type { RunState } from '../shared/types.js';
import type { kilnRun } from '../workflows/run.js';
import { readState } from './runs.js';

export interface RecordedHead {
  /** undefined: the run keeps no head (it started before heads were kept) */
  head: AuditHead | undefined;
  from: string;
}

const isHead = (v: unknown): v is AuditHead =>
  typeof v === 'object' && v !== null && typeof (v as AuditHead).seq === 'number' && typeof (v as AuditHead).hash === 'string';

export async function recordedAuditHead(handle: WorkflowHandle<typeof kilnRun>, client: Client): Promise<RecordedHead> {
  const st = await readState(handle);
  if (st) return { head: isHead(st.auditHead) ? st.auditHead : undefined, from: 'the run (status query)' };
  return { head: await headFromHistory(handle, client), from: "the run's Temporal history" };
}

/** The last recordAudit result in the latest execution's history, else the head its continue-as-new carry brought. */
async function headFromHistory(handle: WorkflowHandle, client: Client): Promise<AuditHead | undefined> {
  const history = await handle.fetchHistory();
  const converter = client.options.loadedDataConverter;
  const auditScheduled = new Set<string>();
  let head: AuditHead | undefined;
  let carried: AuditHead | undefined;
  for (const e of history.events ?? []) {
    const started = e.workflowExecutionStartedEventAttributes;
    if (started && (started.input?.payloads?.length ?? 0) > 1) {
      const carry = await decodeFromPayloadsAtIndex<{ state?: RunState } | undefined>(converter, 1, started.input!.payloads);
      if (isHead(carry?.state?.auditHead)) carried = carry.state.auditHead;
    }
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'recordAudit') auditScheduled.add(String(e.eventId));
    const done = e.activityTaskCompletedEventAttributes;
    if (done && auditScheduled.has(String(done.scheduledEventId))) {
      const r = await decodeFromPayloadsAtIndex<unknown>(converter, 0, done.result?.payloads);
      if (isHead(r)) head = r;
    }
  }
  return head ?? carried;
}
