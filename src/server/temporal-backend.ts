/** The run store `kiln serve` uses: Temporal, through the same client code as the CLI. */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { fleetQuery } from '../client/fleet-query.js';
import { budgetView } from '../client/budget.js';
import type { LedgerView } from '../shared/budget-ledger.js';
import { hasKilnSearchAttributes, outcome, readState, requestCancel, sendApproval, sendHuman, startInput, startRun } from '../client/runs.js';
import { startedBySignal } from '../shared/messages.js';
import type { StartAttestation } from '../shared/types.js';
import { KilnPhase, KilnTenant } from '../shared/search-attributes.js';
import type { kilnRun } from '../workflows/run.js';
import type { ListQuery, RunBackend, RunInfo, RunMemo } from './backend.js';
import { signedStartOf, type SignedStart } from './signed-start.js';

const MEMO_KEY = 'kilnServe';

/**
 * A run as the API sees it. Tenant and repo come only from the start the server signed for this
 * execution: a search attribute or memo is whatever the execution's starter wrote, and anyone
 * with gRPC access may start an execution under a closed run's id.
 */
function info(w: Omit<WorkflowExecutionInfo, 'raw'>, execution: string, signed: SignedStart | undefined): RunInfo {
  const memo = (w.memo?.[MEMO_KEY] ?? {}) as RunMemo;
  return {
    runId: w.workflowId,
    execution,
    tenant: signed?.tenant,
    status: w.status.name,
    open: w.status.name === 'RUNNING',
    phase: w.typedSearchAttributes.get(KilnPhase),
    repo: signed?.repo,
    startedAt: w.startTime.toISOString(),
    closedAt: w.closeTime?.toISOString(),
    memo: signed ? { ...memo, startedBy: signed.user } : {},
  };
}

export class TemporalBackend implements RunBackend {
  private sa?: boolean;
  /** signed starts found, by first execution: a verified one never changes */
  private readonly signed = new Map<string, SignedStart>();
  /** first execution of each execution looked up, by its run id */
  private readonly firstRuns = new Map<string, string>();
  /** run ids whose newest execution the server did not start: the execution (run id) it did */
  private readonly pinned = new Map<string, string>();
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string | undefined,
    private readonly approvalKey: Buffer,
  ) {}

  async start(input: Parameters<RunBackend['start']>[0], tenant: string, memo: RunMemo) {
    const s = await startRun(this.client, input, { taskQueue: this.taskQueue, tenant, memo: { [MEMO_KEY]: memo } });
    return { runId: s.handle.workflowId, attached: s.attached, ...(s.execution ? { execution: s.execution } : {}) };
  }

  async attestStart(runId: string, execution: string, start: StartAttestation): Promise<void> {
    // to that execution only: if another took the id meanwhile, the signal fails rather than vouching for it
    await this.client.workflow.getHandle(runId, execution).signal(startedBySignal, start);
    // this server signed it: it knows the start at once, while Temporal may hold the signal back
    // until the run's first workflow task completes (a read of the history right after misses it)
    this.signed.set(execution, { tenant: start.tenant, repo: start.repo, user: start.user });
  }

  private async signedStart(workflowId: string, execution: string): Promise<SignedStart | undefined> {
    const known = this.signed.get(execution);
    if (known) return known;
    const found = await signedStartOf(this.client, this.approvalKey, workflowId, execution);
    // only a verified start is kept: one not found yet may still arrive (the signal follows the start)
    if (found) this.signed.set(execution, found);
    return found;
  }

  /**
   * The run as the server started it. When the id now names an execution the server did not start
   * (anyone with gRPC access may start one under a closed run's id), the run is the latest
   * execution under that id whose start the server signed: its tenant still reads it, nobody
   * else does, and the calls below go to that execution, not the newer one.
   */
  async describe(runId: string): Promise<RunInfo | undefined> {
    try {
      const d = await this.client.workflow.getHandle(runId).describe();
      const execution = d.raw.workflowExecutionInfo?.firstRunId || d.runId;
      const signed = await this.signedStart(runId, execution);
      if (signed) {
        this.pinned.delete(runId);
        return info(d, execution, signed);
      }
      const earlier = await this.signedEarlier(runId);
      if (!earlier) return info(d, execution, undefined);
      this.pinned.set(runId, earlier.runId);
      return earlier.run;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /** The newest execution under `workflowId` that the server signed a start for, if any. */
  private async signedEarlier(workflowId: string): Promise<{ run: RunInfo; runId: string } | undefined> {
    // the id is one the route checked (letters, digits, . _ -): no quote can end the literal
    for await (const w of this.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      if (w.status.name === 'CONTINUED_AS_NEW') continue;
      const execution = await this.firstRunOf(w);
      const signed = await this.signedStart(workflowId, execution);
      if (signed) return { run: info(w, execution, signed), runId: w.runId };
    }
    return undefined;
  }

  /**
   * The first execution of a listed execution's chain: what the server's signatures name. A
   * visibility row may not carry it (a continued run's last execution): then it is described,
   * once (a server without first run ids: the execution's own).
   */
  private async firstRunOf(w: WorkflowExecutionInfo): Promise<string> {
    if (w.raw.firstRunId) return w.raw.firstRunId;
    let first = this.firstRuns.get(w.runId);
    if (!first) {
      const d = await this.client.workflow.getHandle(w.workflowId, w.runId).describe();
      first = d.raw.workflowExecutionInfo?.firstRunId || w.runId;
      this.firstRuns.set(w.runId, first);
    }
    return first;
  }

  /** The execution a run id stands for: the one describe found the server's start for. */
  private handle(runId: string) {
    return this.client.workflow.getHandle<typeof kilnRun>(runId, this.pinned.get(runId));
  }

  async list(q: ListQuery): Promise<RunInfo[]> {
    // the search attribute narrows the search; the signed start decides (the tenant is a literal the token store vouched for)
    const parts = [fleetQuery(q), `${KilnTenant.name} = '${q.tenant}'`];
    if (q.open) parts.push(`ExecutionStatus = 'Running'`);
    if (q.startedSince) parts.push(`StartTime >= '${q.startedSince.toISOString()}'`);
    const out: RunInfo[] = [];
    for await (const w of this.client.workflow.list({ query: parts.join(' AND ') })) {
      // each continue-as-new leaves an execution behind; the run is its latest one (and an
      // earlier one's result() would wait for the whole chain)
      if (w.status.name === 'CONTINUED_AS_NEW') continue;
      const execution = await this.firstRunOf(w);
      const run = info(w, execution, await this.signedStart(w.workflowId, execution));
      if (run.tenant !== q.tenant) continue;
      out.push(run);
      if (out.length >= (q.limit ?? 100)) break;
    }
    return out;
  }

  state(runId: string) {
    return readState(this.handle(runId));
  }

  async result(runId: string) {
    try {
      return await outcome(this.handle(runId));
    } catch {
      return undefined;
    }
  }

  input(runId: string) {
    return startInput(this.handle(runId));
  }

  cancel(runId: string, by: string, reason?: string): Promise<boolean> {
    return requestCancel(this.handle(runId), { by, reason, via: 'kiln serve' });
  }

  approve(runId: string, d: Parameters<RunBackend['approve']>[1]) {
    return sendApproval(this.client, this.handle(runId), d);
  }

  human(runId: string, d: Parameters<RunBackend['human']>[1]) {
    return sendHuman(this.client, this.handle(runId), d);
  }

  budget(tenant: string): Promise<LedgerView | undefined> {
    return budgetView(this.client, tenant);
  }

  async searchAttributes(): Promise<boolean> {
    this.sa ??= await hasKilnSearchAttributes(this.client);
    return this.sa;
  }
}
