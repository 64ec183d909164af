/** The run store `kiln serve` uses: Temporal, through the same client code as the CLI. */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { fleetQuery } from '../client/fleet-query.js';
import { handleFor, hasKilnSearchAttributes, outcome, readState, requestCancel, sendApproval, sendHuman, startInput, startRun } from '../client/runs.js';
import { KilnPhase, KilnRepo, KilnTenant } from '../temporal/search-attributes.js';
import type { ListQuery, RunBackend, RunInfo, RunMemo } from './backend.js';

const MEMO_KEY = 'kilnServe';

function info(w: Omit<WorkflowExecutionInfo, 'raw'>): RunInfo {
  const memo = (w.memo?.[MEMO_KEY] ?? {}) as RunMemo;
  return {
    runId: w.workflowId,
    tenant: w.typedSearchAttributes.get(KilnTenant),
    status: w.status.name,
    open: w.status.name === 'RUNNING',
    phase: w.typedSearchAttributes.get(KilnPhase),
    repo: w.typedSearchAttributes.get(KilnRepo),
    startedAt: w.startTime.toISOString(),
    closedAt: w.closeTime?.toISOString(),
    memo,
  };
}

export class TemporalBackend implements RunBackend {
  private sa?: boolean;
  constructor(
    private readonly client: Client,
    private readonly taskQueue?: string,
  ) {}

  async start(input: Parameters<RunBackend['start']>[0], tenant: string, memo: RunMemo) {
    const s = await startRun(this.client, input, { taskQueue: this.taskQueue, tenant, memo: { [MEMO_KEY]: memo } });
    return { runId: s.handle.workflowId, attached: s.attached };
  }

  async describe(runId: string): Promise<RunInfo | undefined> {
    try {
      return info(await handleFor(this.client, runId).describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  async list(q: ListQuery): Promise<RunInfo[]> {
    // the tenant is a literal the token store vouched for (its name allows no quotes)
    const parts = [fleetQuery(q), `${KilnTenant.name} = '${q.tenant}'`];
    if (q.open) parts.push(`ExecutionStatus = 'Running'`);
    if (q.startedSince) parts.push(`StartTime >= '${q.startedSince.toISOString()}'`);
    const out: RunInfo[] = [];
    for await (const w of this.client.workflow.list({ query: parts.join(' AND ') })) {
      // each continue-as-new leaves an execution behind; the run is its latest one (and an
      // earlier one's result() would wait for the whole chain)
      if (w.status.name === 'CONTINUED_AS_NEW') continue;
      out.push(info(w));
      if (out.length >= (q.limit ?? 100)) break;
    }
    return out;
  }

  state(runId: string) {
    return readState(handleFor(this.client, runId));
  }

  async result(runId: string) {
    try {
      return await outcome(handleFor(this.client, runId));
    } catch {
      return undefined;
    }
  }

  input(runId: string) {
    return startInput(handleFor(this.client, runId));
  }

  cancel(runId: string, by: string, reason?: string): Promise<boolean> {
    return requestCancel(handleFor(this.client, runId), { by, reason, via: 'kiln serve' });
  }

  approve(runId: string, d: Parameters<RunBackend['approve']>[1]) {
    return sendApproval(this.client, handleFor(this.client, runId), d);
  }

  human(runId: string, d: Parameters<RunBackend['human']>[1]) {
    return sendHuman(this.client, handleFor(this.client, runId), d);
  }

  async searchAttributes(): Promise<boolean> {
    this.sa ??= await hasKilnSearchAttributes(this.client);
    return this.sa;
  }
}
