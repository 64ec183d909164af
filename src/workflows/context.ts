/**
 * Everything one run knows, in one object: the state a query shows, the approvals and the
 * person's decision the handlers fill in, and the bookkeeping the attempt loop needs. Its
 * snapshot is the continue-as-new carry, so a continued run goes on exactly where it stopped.
 * (The plain-class-holds-the-state shape of Temporal's safe-message-handlers sample.)
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Checkpoint, PrepareResult } from '../shared/contracts.js';
import type {
  ApprovalDecision,
  CancelRequest,
  HeldPreApproval,
  HumanDecision,
  Phase,
  PreApproval,
  RunInput,
  RunState,
  StartAttestation,
} from '../shared/types.js';
import { KilnApprovers, KilnBudgetShare, KilnPhase, KilnTouched, KilnWaitingSince } from '../shared/search-attributes.js';
import { detailsMarkdown } from './details.js';
import { budgetShare } from '../loop/budget.js';
import { initialState, log, setPhase } from './machine.js';
import { hostActivities, isHostLost, shared, type Activities, type Acts } from './options.js';
import type { LoopState } from '../loop/state.js';
import { phaseChanged } from './metrics.js';

/** Budget share is kept in steps of 5%: fine enough for "over 80%", and a turn rarely adds an upsert. */
const SHARE_STEP = 0.05;

/** Failures kept for the compaction summary and the Web UI. */
const MAX_FAILURES = 10;

/**
 * Everything a continued run needs to go on exactly where the previous run stopped. Its shape
 * is in recorded histories (continue-as-new input): add only optional fields.
 */
export interface Carry {
  state: RunState;
  startedAtMs: number;
  approvalSeq: number;
  decided: string[];
  expired: string[];
  prep: PrepareResult;
  previousSignature?: string;
  failures: string[];
  loop: LoopState;
  checkpoint?: Extract<Checkpoint, { patch: string }>;
}

type AuditEntry = Parameters<Activities['recordAudit']>[0]['entry'];

export class RunContext {
  readonly state: RunState;
  readonly startedAtMs: number;
  /** continue-as-new counts turns from here */
  readonly turnAtRunStart: number;
  /** approval decisions received and not yet consumed, by approval id */
  readonly decisions = new Map<string, ApprovalDecision>();
  /** decisions on approvals the policy's approvals section governs: every one arrives here, the attempt counts them */
  readonly votes = new Map<string, ApprovalDecision[]>();
  /** pre-approvals held but not yet written to the audit (the attempt writes them between its steps) */
  private unauditedPre: HeldPreApproval[] = [];
  readonly decided: Set<string>;
  readonly expired: Set<string>;
  /** a person's decision while the run is needs_human; set by the handlers */
  human: HumanDecision | undefined;
  /** who asked to cancel (the cancelRequest signal that precedes a cancel) */
  cancelRequest: CancelRequest | undefined;
  approvalSeq: number;
  /** the last verdict's signature: the same failure twice in a row goes to a person */
  previousSignature: string | undefined;
  readonly failures: string[];
  /** the worktree's last patch against the base: what a rebuild on another host starts from */
  checkpoint: Carry['checkpoint'];
  prep: PrepareResult | undefined;
  /** activities on the worktree's host; undefined until the worktree exists */
  host: Acts | undefined;
  /** the baseline taken beside the turns (run.ts): settles, never rejects; verify wants and awaits it */
  baseline: { settled: Promise<void>; want: () => void; cancel: () => void } | undefined;
  /** `kiln serve`'s signed starts this execution received (the startedBy signal), checked by a worker */
  readonly startClaims: StartAttestation[] = [];
  /** who decided the last approval (two people, for some); the next showFleet adds them to the approvers */
  private approvers: string[] = [];
  /** log lines not yet handed to an activity for events.jsonl (the writer skips seqs it has) */
  private unwritten: number;

  constructor(
    readonly input: RunInput,
    carry?: Carry,
  ) {
    this.state = carry?.state ?? initialState(input);
    // a continued run is the same run: it entered its phase before continue-as-new
    if (!carry) phaseChanged(undefined, this.state.phase);
    this.startedAtMs = carry?.startedAtMs ?? Date.now();
    this.turnAtRunStart = this.state.turn;
    this.decided = new Set(carry?.decided);
    this.expired = new Set(carry?.expired);
    this.approvalSeq = carry?.approvalSeq ?? 0;
    this.previousSignature = carry?.previousSignature;
    this.failures = carry?.failures ?? [];
    this.checkpoint = carry?.checkpoint;
    this.unwritten = carry ? this.state.log.length : 0;
    this.prep = carry?.prep;
    this.host = this.prep ? hostActivities(input, this.prep.hostQueue) : undefined;
  }

  /** What continue-as-new hands to the next run. */
  snapshot(loop: LoopState): Carry {
    return {
      state: this.state,
      startedAtMs: this.startedAtMs,
      approvalSeq: this.approvalSeq,
      decided: [...this.decided],
      expired: [...this.expired],
      prep: this.prep!,
      previousSignature: this.previousSignature,
      failures: this.failures,
      loop,
      checkpoint: this.checkpoint,
    };
  }

  now(): string {
    return new Date().toISOString();
  }

  elapsedMs(): number {
    return Date.now() - this.startedAtMs;
  }

  /** A workspace is ready (first or rebuilt): its host takes the worktree's activities from now on. */
  useWorkspace(prep: PrepareResult): void {
    this.prep = prep;
    this.state.worktree = prep.worktree;
    this.state.hostQueue = prep.hostQueue;
    this.host = hostActivities(this.input, prep.hostQueue);
  }

  note(kind: Parameters<typeof log>[2], text: string): void {
    log(this.state, this.now(), kind, text);
    this.unwritten++;
  }

  /** A phase change: checked against the machine's table, logged, shown in the Web UI. */
  phase(p: Phase, why?: string): void {
    const from = this.state.phase;
    setPhase(this.state, p, this.now(), why);
    phaseChanged(from, p);
    this.unwritten++;
    this.showDetails();
    if (!this.input.searchAttributes) return;
    // one upsert (one history event) for the phase and whatever else changed
    this.showFleet([{ key: KilnPhase, value: p }]);
  }

  /**
   * The fleet-query attributes: files touched, approvers, budget share, waiting since. Only the
   * ones that changed are upserted (compared with what the server has), so history grows by at
   * most one event a turn besides the phase changes (which carry the changes with them).
   */
  showFleet(also: SearchAttributeUpdatePair[] = []): void {
    const newApprovers = this.approvers;
    this.approvers = [];
    if (!this.input.searchAttributes) return;
    const s = this.state;
    const has = workflowInfo().typedSearchAttributes;
    const updates: SearchAttributeUpdatePair[] = [...also];
    const touched = [...s.touchedFiles].sort();
    if (touched.join('\n') !== (has.get(KilnTouched) ?? []).join('\n')) updates.push({ key: KilnTouched, value: touched });
    const approvers = has.get(KilnApprovers) ?? [];
    const added = newApprovers.filter((a, i) => !approvers.includes(a) && newApprovers.indexOf(a) === i);
    if (added.length) updates.push({ key: KilnApprovers, value: [...approvers, ...added].sort() });
    const share = Math.floor(budgetShare({ ...s.budget, wallMs: this.elapsedMs() }, this.input.budgets) / SHARE_STEP) * SHARE_STEP;
    const rounded = Math.round(share * 100) / 100;
    if (rounded !== (has.get(KilnBudgetShare) ?? 0)) updates.push({ key: KilnBudgetShare, value: rounded });
    const oldest = s.pendingApprovals.map((a) => a.requestedAt).sort()[0];
    const since = has.get(KilnWaitingSince);
    if (oldest && since?.toISOString() !== new Date(oldest).toISOString()) updates.push({ key: KilnWaitingSince, value: new Date(oldest) });
    if (!oldest && since) updates.push({ key: KilnWaitingSince, value: null });
    if (updates.length) upsertSearchAttributes(updates);
  }

  /** The Web UI's current details: phase, reason, pending approvals and the plan. */
  showDetails(): void {
    setCurrentDetails(this.details());
  }

  private details(): string {
    return detailsMarkdown(this.state);
  }

  fail(text: string): void {
    this.failures.push(text.slice(0, 300));
    if (this.failures.length > MAX_FAILURES) this.failures.splice(0, this.failures.length - MAX_FAILURES);
  }

  /** Names the run for an activity. */
  ref(): { runId: string; repo: string } {
    return { runId: this.input.runId, repo: this.input.repo };
  }

  /** The log lines no activity has been handed yet, counted as handed: the caller sends them in its input. */
  takeUnwritten(): RunState['log'] {
    const fresh = this.state.log.slice(Math.max(0, this.state.log.length - this.unwritten));
    this.unwritten = 0;
    return fresh;
  }

  /**
   * Audit lines go to the worktree's host, or to any worker when that host is gone. Each continues
   * from the head the run recorded (never from the file's last line) and names the execution.
   */
  async audit(entry: AuditEntry): Promise<void> {
    const line = { entry, head: this.state.auditHead ?? null, execution: workflowInfo().firstExecutionRunId, at: this.now() };
    const head = await (this.host ?? shared).recordAudit({ ...this.ref(), events: this.takeUnwritten(), ...line }).catch((err: unknown) => {
      if (!isHostLost(err)) throw err;
      return shared.recordAudit({ ...this.ref(), events: this.takeUnwritten(), ...line });
    });
    // the chain's end, kept outside the file (state, history) for `kiln audit verify`; histories from before return nothing
    if (head && typeof head.seq === 'number') this.state.auditHead = { seq: head.seq, hash: head.hash };
  }

  acceptDecision(d: ApprovalDecision): void {
    // several people may answer one of these; the attempt decides when it is decided
    if (this.state.pendingApprovals.find((a) => a.id === d.approvalId)?.approvals) {
      this.votes.set(d.approvalId, [...(this.votes.get(d.approvalId) ?? []), d]);
      return;
    }
    this.decisions.set(d.approvalId, d);
    this.decided.add(d.approvalId);
  }

  /** Holds a pre-approval until a request for exactly its command appears. */
  holdPreApproval(p: PreApproval): HeldPreApproval {
    const s = this.state;
    s.preApprovalSeq = (s.preApprovalSeq ?? 0) + 1;
    const held: HeldPreApproval = {
      id: `pre-${s.preApprovalSeq}`,
      text: p.text,
      scope: p.scope ?? 'once',
      by: p.by?.slice(0, 200) || 'unknown',
      at: this.now(),
      answered: [],
    };
    s.preApprovals = [...(s.preApprovals ?? []), held];
    this.unauditedPre.push(held);
    this.note(
      'approval',
      `${held.id} held: a command that is exactly \`${held.text.slice(0, 200)}\` is approved${held.scope === 'run' ? ' every time' : ' once'} (by ${held.by})`,
    );
    return held;
  }

  /** The pre-approval for exactly this command, if the run holds one. */
  preApprovalFor(exact: string | undefined): HeldPreApproval | undefined {
    return exact === undefined ? undefined : this.state.preApprovals?.find((p) => p.text === exact);
  }

  /** A pre-approval answered an approval: a once-only one is used up. */
  usePreApproval(p: HeldPreApproval, approvalId: string): void {
    p.answered.push(approvalId);
    if (p.scope === 'once') this.state.preApprovals = this.state.preApprovals?.filter((x) => x.id !== p.id);
  }

  /** Writes the pre-approvals received since the last call to the audit, in the order they came. */
  async auditPreApprovals(): Promise<void> {
    while (this.unauditedPre.length) {
      const p = this.unauditedPre.shift()!;
      await this.audit({ kind: 'pre-approval', id: p.id, decision: 'held', scope: p.scope, what: p.text.slice(0, 600), command: p.text, by: p.by });
    }
  }

  /** A person decided an approval: the fleet attributes name them at the next phase change. */
  approvedBy(...by: string[]): void {
    this.approvers = by;
  }

  /** Read through a method: handlers set it while the workflow awaits, which narrowing cannot see. */
  takeHuman(): HumanDecision | undefined {
    const d = this.human;
    this.human = undefined;
    return d;
  }
}
