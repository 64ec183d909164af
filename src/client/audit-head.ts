/**
 * Where the run recorded the end of its audit chain: the head each recordAudit returned, kept by
 * the workflow, not state.json (which sits beside audit.jsonl and can be edited with it). An open
 * run (or any run while a worker answers) says it in its status query; otherwise its history
 * holds every recordAudit result, and a continued run's carry holds the head from before.
 *
 * The head is read from the execution the audit names (its lines carry the first execution's
 * Temporal run id): a run id reused by a new execution does not hide the old execution's record.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/codec-helpers.js';
import type { AuditHead } from '../store/audit-chain.js';
import type { RunState } from '../shared/types.js';
import type { kilnRun } from '../workflows/run.js';
import { readState } from './runs.js';

export interface RecordedHead {
  /** undefined: the execution keeps no head (it wrote no audit line, or started before heads were kept) */
  head: AuditHead | undefined;
  from: string;
  /** the first execution's Temporal run id the head was read from */
  execution?: string;
}

const isHead = (v: unknown): v is AuditHead =>
  typeof v === 'object' && v !== null && typeof (v as AuditHead).seq === 'number' && typeof (v as AuditHead).hash === 'string';

/** Continued executions one run may have: far more than any run makes, and a bound on a forged chain. */
const MAX_CHAIN = 1000;

/**
 * The head recorded by `execution` (the first execution's run id an audit names), or by the run's
 * latest execution when the audit names none (written before lines named their execution).
 */
export async function recordedAuditHead(handle: WorkflowHandle<typeof kilnRun>, client: Client, execution?: string): Promise<RecordedHead> {
  const d = await handle.describe();
  const latest = d.raw.workflowExecutionInfo?.firstRunId || d.runId;
  if (execution === undefined || execution === latest) {
    const st = await readState(handle);
    if (st) return { head: isHead(st.auditHead) ? st.auditHead : undefined, from: 'the run (status query)', execution: latest };
    return { head: await headFromHistory(client, handle.workflowId, d.runId), from: "the run's Temporal history", execution: latest };
  }
  // the id now names another execution: follow the audit's own execution through its continue-as-new chain
  let runId = execution;
  let head: AuditHead | undefined;
  for (let i = 0; i < MAX_CHAIN; i++) {
    const h = await headAndNext(client, handle.workflowId, runId);
    head = h.head ?? head;
    if (!h.next) break;
    runId = h.next;
  }
  return { head, from: `the Temporal history of execution ${execution} (the run id now names execution ${latest})`, execution };
}

async function headFromHistory(client: Client, workflowId: string, runId: string): Promise<AuditHead | undefined> {
  return (await headAndNext(client, workflowId, runId)).head;
}

/** The last recordAudit result in one execution's history, else the head its continue-as-new carry brought; and the execution it continued as. */
async function headAndNext(client: Client, workflowId: string, runId: string): Promise<{ head: AuditHead | undefined; next?: string }> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const converter = client.options.loadedDataConverter;
  const auditScheduled = new Set<string>();
  let head: AuditHead | undefined;
  let carried: AuditHead | undefined;
  let next: string | undefined;
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
    next = e.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
  }
  return { head: head ?? carried, ...(next ? { next } : {}) };
}
