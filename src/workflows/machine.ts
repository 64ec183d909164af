/**
 * The run state machine: which phase may follow which, and why (the table below is the whole
 * of it), plus the pure decisions the workflow takes between phases. No Temporal import, so all
 * of it is unit-tested without a server; the workflow (./run.ts, ./attempt.ts) only orchestrates.
 */
import type { ApprovalDecision, LogLine, Phase, PendingApproval, PreApproval, RunInput, RunState, Usage, Verdict } from '../shared/types.js';
import { PRE_APPROVAL_MAX_CHARS, TERMINAL_PHASES } from '../shared/types.js';
import { artifactsDir } from '../shared/paths.js';
import { addTurn } from '../loop/budget.js';

/** Phases a run works in; the rest (succeeded, blocked, cancelled) are its end states. */
export const ACTIVE_PHASES = [
  'preparing',
  'planning',
  'editing',
  'awaiting_approval',
  'awaiting_budget',
  'verifying',
  'retrying',
  'needs_human',
] as const satisfies readonly Phase[];

/** Every phase: the fleet's filters and gauges name them all. */
export const ALL_PHASES: readonly Phase[] = [...ACTIVE_PHASES, ...TERMINAL_PHASES];

export interface Transition {
  from: readonly Phase[];
  to: Phase;
  /** when the workflow takes this step: what a newcomer needs to find the code that does */
  why: string;
}

const step = (from: Phase | readonly Phase[], to: Phase, why: string): Transition => ({
  from: typeof from === 'string' ? [from] : from,
  to,
  why,
});
const WORKING = ['planning', 'editing'] as const;

/**
 * Every phase change the run makes, in the order a run meets them. setPhase refuses any other:
 * a change the table does not list is a bug in the workflow.
 */
export const TRANSITIONS: readonly Transition[] = [
  step('preparing', 'planning', 'the worktree is ready: the first attempt starts by reading'),
  step('preparing', 'editing', 'a worktree rebuilt after a host loss, with work already done'),
  step('preparing', 'blocked', 'setup failed'),
  step('preparing', 'awaiting_approval', 'the policy names the setup (it runs with network): its approvers decide first'),
  step('awaiting_approval', 'preparing', 'the setup was approved: it runs'),
  step('awaiting_approval', 'blocked', 'the setup was rejected, or nobody approved it in time'),
  step('planning', 'editing', 'the model called a tool that is not read-only'),
  step(WORKING, 'awaiting_approval', 'the policy asks a person about a call'),
  step('awaiting_approval', 'editing', 'a person approved or rejected the call'),
  step('awaiting_approval', 'needs_human', 'nobody decided on the call in time'),
  step(WORKING, 'awaiting_budget', "the next model call's worst case does not fit a limit of the budget ledger: it is not sent, a person decides"),
  step('awaiting_budget', 'planning', 'the limit was raised and a person approved: the call is tried again'),
  step('awaiting_budget', 'editing', 'the limit was raised and a person approved: the call is tried again'),
  step('awaiting_budget', 'blocked', 'a person rejected the call over the budget: the run stops'),
  step('awaiting_budget', 'needs_human', 'nobody decided on the budget in time'),
  step('verifying', 'awaiting_budget', "the independent review's call does not fit a limit of the budget ledger: a person decides"),
  step('awaiting_budget', 'verifying', 'the limit was raised and a person approved: the review is asked again'),
  step(WORKING, 'verifying', 'the model finished (finish, or a turn without calls) and the stop gate let it'),
  step(WORKING, 'retrying', 'the attempt got stuck; attempts are left'),
  step(WORKING, 'needs_human', 'the attempt got stuck: no attempts left, or the same failure twice'),
  step(WORKING, 'blocked', 'a budget ran out'),
  step([...WORKING, 'verifying'], 'preparing', "the worktree's host is lost: rebuild it elsewhere"),
  step('verifying', 'succeeded', 'the checks and the diff pass'),
  step(['verifying', 'needs_human'], 'awaiting_approval', "the patch is over the policy's size (approvals.patch): its approvers decide"),
  step('awaiting_approval', 'succeeded', 'the patch over the size was approved'),
  step('verifying', 'retrying', 'verification failed; attempts are left'),
  step('verifying', 'needs_human', 'verification failed: no attempts left, or the same failure twice'),
  step('retrying', 'editing', 'the next attempt starts with the failure in its prompt'),
  step('needs_human', 'retrying', 'a person sent a hint'),
  step('needs_human', 'succeeded', 'a person accepted the work as it is'),
  step('needs_human', 'blocked', 'a person abandoned the run, or nobody decided in time'),
  step(ACTIVE_PHASES, 'blocked', 'an activity failed for good (a non-retryable error, retries exhausted)'),
  step(ACTIVE_PHASES, 'cancelled', 'cancelled by request'),
  // An end state is set before the artifacts are written, so that writing can still fail or be cancelled.
  step(['succeeded', 'blocked'], 'blocked', 'writing the artifacts failed'),
  step(['succeeded', 'blocked'], 'cancelled', 'cancelled while the artifacts were written'),
];

/**
 * A plain Error on purpose: in workflow code it fails the workflow task, not the run, so the run
 * waits for a fixed worker and replays instead of ending in a state nobody designed.
 */
export class IllegalTransitionError extends Error {
  constructor(from: Phase, to: Phase) {
    super(`illegal phase transition ${from} → ${to}: not in TRANSITIONS (src/workflows/machine.ts)`);
    this.name = 'IllegalTransitionError';
  }
}

/** The table's reason for from → to, or undefined when the step is illegal. */
export function transition(from: Phase, to: Phase): Transition | undefined {
  return TRANSITIONS.find((t) => t.to === to && t.from.includes(from));
}

/**
 * Moves the run to a phase the table allows, and logs it. The same phase again without a note
 * changes nothing, so it is no transition; with a note it is one (the log line says why).
 */
export function setPhase(state: RunState, phase: Phase, at: string, note?: string): void {
  if (state.phase === phase && !note) return;
  if (!transition(state.phase, phase)) throw new IllegalTransitionError(state.phase, phase);
  state.phase = phase;
  log(state, at, 'phase', note ? `${phase}: ${note}` : phase);
}

export type AfterVerdict = { next: 'succeeded' } | { next: 'retry'; attempt: number } | { next: 'needs_human'; reason: string };

/**
 * What follows a verdict: pass → succeeded; the same failure twice in a row → a person at once
 * (another attempt would burn budget on the same wall); attempts left → retry; else a person.
 */
export function afterVerdict(state: RunState, verdict: Verdict, previousSignature: string | undefined): AfterVerdict {
  if (verdict.pass) return { next: 'succeeded' };
  if (previousSignature !== undefined && previousSignature === verdict.signature) {
    return { next: 'needs_human', reason: `the same failure twice in a row: ${verdict.summary}` };
  }
  if (state.attempt < state.maxAttempts) return { next: 'retry', attempt: state.attempt + 1 };
  return { next: 'needs_human', reason: `no attempts left (${state.maxAttempts}): ${verdict.summary}` };
}

/**
 * The table as text, for the README (tests/unit/workflows/transitions.test.ts keeps the README equal to it).
 * One line per rule: a newcomer reads the run's life top to bottom.
 */
export function describeTransitions(): string {
  const name = (t: Transition) => (t.from === ACTIVE_PHASES ? 'any active phase' : t.from.join(' | '));
  const width = Math.max(...TRANSITIONS.map((t) => name(t).length));
  const toWidth = Math.max(...TRANSITIONS.map((t) => t.to.length));
  return [`active phases: ${ACTIVE_PHASES.join(', ')}`, '', ...TRANSITIONS.map((t) => `${name(t).padEnd(width)} → ${t.to.padEnd(toWidth)}  ${t.why}`)].join(
    '\n',
  );
}

// The run's state and the pure updates the workflow makes to it.

/** Bounded so the state a query returns (and the history that carries it) stays small. */
export const MAX_LOG_LINES = 60;
export const MAX_OBSERVATION_CHARS = 600;

export function initialState(input: RunInput): RunState {
  return {
    runId: input.runId,
    goal: input.goal,
    repo: input.repo,
    model: input.model,
    scripted: input.model.startsWith('scripted:'),
    phase: 'preparing',
    attempt: 1,
    maxAttempts: input.maxAttempts,
    turn: 0,
    plan: [],
    touchedFiles: [],
    lastObservation: '',
    pendingApprovals: [],
    grants: [],
    budget: { turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costUsd: 0, wallMs: 0 },
    artifactsDir: artifactsDir(input.repo, input.runId),
    log: [],
    logSeq: 0,
  };
}

export function log(state: RunState, at: string, kind: LogLine['kind'], text: string): LogLine {
  const line: LogLine = { seq: ++state.logSeq, at, kind, text: text.slice(0, 400) };
  state.log.push(line);
  if (state.log.length > MAX_LOG_LINES) state.log.splice(0, state.log.length - MAX_LOG_LINES);
  return line;
}

export function observe(state: RunState, text: string): void {
  state.lastObservation = text.slice(0, MAX_OBSERVATION_CHARS);
}

export function addUsage(state: RunState, usage: Usage, costUsd: number): void {
  addTurn(state.budget, usage, costUsd);
}

export function touch(state: RunState, path: string): void {
  if (!state.touchedFiles.includes(path)) state.touchedFiles.push(path);
}

/**
 * Validates an approval decision: the Update validator rejects to the sender with this message;
 * the Signal of the same name drops it (recorded in the log), so a stale decision changes nothing.
 */
export function approvalProblem(state: RunState, decided: ReadonlySet<string>, expired: ReadonlySet<string>, d: ApprovalDecision): string | undefined {
  if (!d || typeof d.approvalId !== 'string') return 'approvalId is required';
  if (typeof d.approve !== 'boolean') return 'approve must be true or false';
  if (d.scope !== undefined && d.scope !== 'once' && d.scope !== 'run') return 'scope must be "once" or "run"';
  if (expired.has(d.approvalId)) return `approval ${d.approvalId} timed out; the run no longer waits for it`;
  if (decided.has(d.approvalId)) return `approval ${d.approvalId} was already decided`;
  if (!state.pendingApprovals.some((a) => a.id === d.approvalId)) {
    const open = state.pendingApprovals.map((a) => a.id).join(', ') || 'none';
    return `unknown approval ${d.approvalId} (pending: ${open})`;
  }
  return undefined;
}

export function findApproval(state: RunState, id: string): PendingApproval | undefined {
  return state.pendingApprovals.find((a) => a.id === id);
}

/** Pre-approvals a run holds at once: a person types each; more is a script flooding the state. */
export const MAX_PRE_APPROVALS = 50;

/** Validates a pre-approval the way approvalProblem validates a decision. */
export function preApprovalProblem(state: RunState, p: PreApproval): string | undefined {
  if (!p || typeof p.text !== 'string' || !p.text.trim()) return 'a pre-approval needs the exact command text';
  if (p.text.length > PRE_APPROVAL_MAX_CHARS) return `a pre-approval names a command of at most ${PRE_APPROVAL_MAX_CHARS} characters`;
  if (p.scope !== undefined && p.scope !== 'once' && p.scope !== 'run') return 'scope must be "once" or "run"';
  if (p.by !== undefined && typeof p.by !== 'string') return 'by must be a name';
  if (TERMINAL_PHASES.includes(state.phase)) return `the run already ended (${state.phase})`;
  if ((state.preApprovals?.length ?? 0) >= MAX_PRE_APPROVALS) return `the run already holds ${MAX_PRE_APPROVALS} pre-approvals`;
  return undefined;
}
