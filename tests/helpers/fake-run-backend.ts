/** An in-memory run store for the API's route tests: what Temporal would answer, without Temporal. */
import type { ListQuery, RunBackend, RunInfo, RunMemo } from '../../src/server/backend.js';
import type { LedgerView } from '../../src/shared/budget-ledger.js';
import type { ApprovalDecision, HumanDecision, PendingApproval, RunInput, RunResult, RunState, StartAttestation } from '../../src/shared/types.js';

interface FakeRun {
  info: RunInfo;
  input?: RunInput;
  state?: RunState;
  result?: RunResult;
}

export function pending(id = 'appr-1'): PendingApproval {
  return {
    id,
    toolUseId: `tu-${id}`,
    tool: 'run_command',
    summary: 'run_command: npm install left-pad',
    segments: [{ argv: ['npm', 'install', 'left-pad'], text: 'npm install left-pad' }],
    rule: 'network',
    reason: 'installs a package from the network',
    hash: `call-of-${id}`,
    requestedAt: '2026-12-01T10:00:00.000Z',
    expiresAt: '2026-12-02T10:00:00.000Z',
  };
}

export function fakeState(runId: string, repo: string, over: Partial<RunState> = {}): RunState {
  return {
    runId,
    goal: 'fix it',
    repo,
    model: 'scripted:x.json',
    scripted: true,
    phase: 'awaiting_approval',
    attempt: 1,
    maxAttempts: 3,
    turn: 2,
    plan: [{ step: 'read the code', status: 'done' }],
    touchedFiles: [],
    lastObservation: '',
    pendingApprovals: [pending()],
    grants: [],
    budget: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, turns: 2, costUsd: 0.01, wallMs: 1000 },
    artifactsDir: `${repo}/.kiln/runs/${runId}`,
    log: [
      { seq: 1, at: '2026-12-01T10:00:00.000Z', kind: 'phase', text: 'preparing' },
      { seq: 2, at: '2026-12-01T10:00:01.000Z', kind: 'turn', text: 'turn 1' },
    ],
    logSeq: 2,
    ...over,
  };
}

/** A finished run's result: succeeded unless `over` says otherwise. */
function fakeResult(runId: string, over: Partial<RunResult> = {}): RunResult {
  return {
    runId,
    state: 'succeeded',
    attempts: 1,
    turns: 2,
    artifactsDir: '',
    patchPath: '',
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    costUsd: 0,
    scripted: true,
    ...over,
  };
}

export class FakeRunBackend implements RunBackend {
  readonly runs = new Map<string, FakeRun>();
  readonly decisions: Array<{ runId: string; d: ApprovalDecision }> = [];
  readonly humans: Array<{ runId: string; d: HumanDecision }> = [];
  readonly cancels: Array<{ runId: string; by: string; reason?: string }> = [];
  starts = 0;
  /** how long a start takes: long enough for two requests to race */
  startDelayMs = 0;
  /** the list does not show runs started here yet, as Temporal's visibility lags a start */
  listLags = false;
  private readonly startedHere = new Set<string>();

  /** a run as another process (or tenant) left it */
  add(
    runId: string,
    tenant: string | undefined,
    o: { repo: string; open?: boolean; state?: Partial<RunState>; result?: Partial<RunResult>; memo?: RunMemo; startedAt?: string },
  ): void {
    const open = o.open ?? true;
    this.runs.set(runId, {
      info: {
        runId,
        execution: `exec-${runId}`,
        tenant,
        status: open ? 'RUNNING' : 'COMPLETED',
        open,
        phase: o.state?.phase ?? 'awaiting_approval',
        repo: o.repo,
        startedAt: o.startedAt ?? new Date().toISOString(),
        memo: o.memo ?? {},
      },
      state: fakeState(runId, o.repo, o.state),
      result: open ? undefined : fakeResult(runId, o.result),
    });
  }

  close(runId: string, result: Partial<RunResult> = {}): void {
    const r = this.runs.get(runId)!;
    r.info = { ...r.info, open: false, status: 'COMPLETED' };
    r.result = fakeResult(runId, result);
  }

  async start(input: RunInput, tenant: string, memo: RunMemo) {
    if (this.startDelayMs) await new Promise((r) => setTimeout(r, this.startDelayMs));
    if (this.runs.has(input.runId)) return { runId: input.runId, attached: true };
    this.starts++;
    this.startedHere.add(input.runId);
    this.runs.set(input.runId, {
      info: {
        runId: input.runId,
        execution: `exec-${input.runId}`,
        tenant,
        status: 'RUNNING',
        open: true,
        phase: 'preparing',
        repo: input.repo,
        startedAt: new Date().toISOString(),
        memo,
      },
      input,
      state: fakeState(input.runId, input.repo, { phase: 'preparing', pendingApprovals: [] }),
    });
    return { runId: input.runId, attached: false, execution: `exec-${input.runId}` };
  }

  /** the signed starts the server sent, by run */
  readonly attested: Array<{ runId: string; execution: string; start: StartAttestation }> = [];

  async attestStart(runId: string, execution: string, start: StartAttestation) {
    this.attested.push({ runId, execution, start });
  }

  async describe(runId: string) {
    const r = this.runs.get(runId);
    return r && { ...r.info };
  }

  async list(q: ListQuery) {
    return [...this.runs.values()]
      .map((r) => r.info)
      .filter((i) => !(this.listLags && this.startedHere.has(i.runId)))
      .filter(
        (i) =>
          i.tenant === q.tenant && (!q.open || i.open) && (!q.startedSince || new Date(i.startedAt!) >= q.startedSince) && (!q.phase || i.phase === q.phase),
      )
      .slice(0, q.limit ?? 100);
  }

  async state(runId: string) {
    return this.runs.get(runId)?.state;
  }

  async result(runId: string) {
    return this.runs.get(runId)?.result;
  }

  async input(runId: string) {
    return this.runs.get(runId)?.input;
  }

  /** runs that end between the server's look at them and their cancel */
  readonly endBeforeCancel = new Set<string>();

  async cancel(runId: string, by: string, reason?: string) {
    if (this.endBeforeCancel.has(runId)) return false;
    this.cancels.push({ runId, by, reason });
    return true;
  }

  async approve(runId: string, d: ApprovalDecision) {
    this.decisions.push({ runId, d });
    const st = this.runs.get(runId)!.state!;
    st.pendingApprovals = st.pendingApprovals.filter((a) => a.id !== d.approvalId);
    return `${d.approve ? 'approved' : 'rejected'} ${d.approvalId}`;
  }

  async human(runId: string, d: HumanDecision) {
    this.humans.push({ runId, d });
    return `${d.action} sent`;
  }

  /** the ledger each tenant's `budget()` answers with */
  ledgers = new Map<string, LedgerView>();
  async budget(tenant: string) {
    return this.ledgers.get(tenant);
  }

  async searchAttributes() {
    return true;
  }
}
