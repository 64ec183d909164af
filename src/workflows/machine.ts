/**
 * The run state machine as plain functions over RunState: no Temporal import, so every
 * transition is unit-tested without a server. The workflow function only orchestrates.
 */
import type {
  ApprovalDecision,
  BudgetUsed,
  Budgets,
  LogLine,
  Phase,
  PendingApproval,
  RunInput,
  RunState,
  Usage,
  Verdict,
} from '../shared/types.js';
import { artifactsDir } from '../shared/paths.js';

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

export function setPhase(state: RunState, phase: Phase, at: string, note?: string): void {
  if (state.phase === phase && !note) return;
  state.phase = phase;
  log(state, at, 'phase', note ? `${phase}: ${note}` : phase);
}

export function observe(state: RunState, text: string): void {
  state.lastObservation = text.slice(0, MAX_OBSERVATION_CHARS);
}

export function addUsage(state: RunState, usage: Usage, costUsd: number): void {
  const b = state.budget;
  b.turns += 1;
  b.input += usage.input;
  b.output += usage.output;
  b.cacheRead += usage.cacheRead;
  b.cacheWrite += usage.cacheWrite;
  b.costUsd = Math.round((b.costUsd + costUsd) * 1e6) / 1e6;
}

export function totalTokens(b: BudgetUsed): number {
  return b.input + b.output + b.cacheRead + b.cacheWrite;
}

/** The first budget that is used up, named as the user set it, or undefined. */
export function budgetExceeded(b: BudgetUsed, limits: Budgets): string | undefined {
  if (b.turns >= limits.maxTurns) return `maxTurns (${limits.maxTurns})`;
  if (totalTokens(b) >= limits.maxTokens) return `maxTokens (${limits.maxTokens})`;
  if (b.costUsd >= limits.maxUsd) return `maxUsd (${limits.maxUsd})`;
  if (b.wallMs >= limits.maxWallMs) return `maxWallMs (${limits.maxWallMs})`;
  return undefined;
}

export function touch(state: RunState, path: string): void {
  if (!state.touchedFiles.includes(path)) state.touchedFiles.push(path);
}

/**
 * Validates an approval decision: the Update validator rejects to the sender with this message;
 * the Signal of the same name drops it (recorded in the log), so a stale decision changes nothing.
 */
export function approvalProblem(
  state: RunState,
  decided: ReadonlySet<string>,
  expired: ReadonlySet<string>,
  d: ApprovalDecision,
): string | undefined {
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

export type AfterVerdict =
  | { next: 'succeeded' }
  | { next: 'retry'; attempt: number }
  | { next: 'needs_human'; reason: string };

/**
 * What follows a verdict: pass → succeeded; the same failure twice in a row → a person at once
 * (another attempt would burn budget on the same wall); attempts left → retry; else a person.
 */
export function afterVerdict(
  state: RunState,
  verdict: Verdict,
  previousSignature: string | undefined,
): AfterVerdict {
  if (verdict.pass) return { next: 'succeeded' };
  if (previousSignature !== undefined && previousSignature === verdict.signature) {
    return { next: 'needs_human', reason: `the same failure twice in a row: ${verdict.summary}` };
  }
  if (state.attempt < state.maxAttempts) return { next: 'retry', attempt: state.attempt + 1 };
  return { next: 'needs_human', reason: `no attempts left (${state.maxAttempts}): ${verdict.summary}` };
}
