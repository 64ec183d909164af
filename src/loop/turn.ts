/**
 * The turn loop's one decision: what follows a turn. Two sides take turns, and both decide here,
 * so they cannot drift apart:
 *
 * - the turn activity (activities/run-ahead.ts) owns the loop while nothing needs a person or the
 *   server: it goes on to the next turn itself only when this says `go_on`, and hands the turns it
 *   took back to the workflow on anything else;
 * - the workflow (workflows/attempt.ts) owns everything else: the phases, asking people, the stop
 *   gate's answers, verification, retries (workflows/machine.ts, afterVerdict) and continue-as-new.
 *   It reads every turn again, the ones the activity took included, and acts on the same answer.
 *
 * Pure: no Temporal, no Node, no I/O, so workflow code and activities import it alike.
 */
import type { BudgetUsed, Budgets } from '../shared/types.js';
import { budgetExceeded } from './budget.js';
import { effectsOf, type DoneCall } from './state.js';
import { observeCall, type StuckState } from './stuck.js';

export type Next =
  /** take the next turn; files may have changed since the last checkpoint */
  | { next: 'go_on'; checkpoint: boolean }
  /** a call needs a person's decision: only the workflow asks */
  | { next: 'ask'; why: string }
  /** the turn holds what only the workflow answers (the stop gate, the plan, a reflection, a refusal) */
  | { next: 'hand_back'; why: string }
  /** the model finished and the stop gate let it: the checks decide, and a failure is retried or goes to a person */
  | { next: 'verify'; gateSatisfied: boolean }
  /** this run's history is long enough: the workflow continues as new before the next turn */
  | { next: 'continue_as_new' }
  | { next: 'stop'; end: 'budget' | 'stuck'; why: string };

/** How a turn ended, as far as the loop is concerned. */
export interface TurnOutcome {
  /** the turn did not start: its input alone would pass the token budget (names the budget) */
  budgetStop?: string;
  /** the model finished (finish, or a turn without calls) and the stop gate let it */
  finished?: { gateSatisfied: boolean };
  /** why the attempt repeats itself (the stuck detector) */
  stuck?: string;
  /** what in the turn only the workflow may take on */
  workflowOnly?: { ask: boolean; why: string };
  /** files may have changed since the last checkpoint */
  dirty: boolean;
}

/** What is checked before the next turn starts, whoever starts it. */
export interface BeforeTurn {
  nextTurn: number;
  /** the last turn this run may start before it continues as new */
  lastTurn: number;
  /** the server suggests continuing as new (the workflow's history is large) */
  suggested?: boolean;
  /** nothing holds the run where it is (an approval still pending does) */
  mayContinueAsNew: boolean;
  /** the budget used so far, wall time included */
  used: BudgetUsed;
  budgets: Budgets;
}

/**
 * What follows a turn. Without `before`, the turn's own outcome only: the side that took the next
 * turn already checked what lies between (the workflow reading turns its activity took).
 */
export function nextAfterTurn(t: TurnOutcome, before?: BeforeTurn): Next {
  if (t.budgetStop) return { next: 'stop', end: 'budget', why: t.budgetStop };
  // a finish earlier in the turn wins over a repetition after it
  if (t.finished) return { next: 'verify', gateSatisfied: t.finished.gateSatisfied };
  if (t.stuck) return { next: 'stop', end: 'stuck', why: t.stuck };
  if (t.workflowOnly) return t.workflowOnly.ask ? { next: 'ask', why: t.workflowOnly.why } : { next: 'hand_back', why: t.workflowOnly.why };
  return before ? beforeNextTurn(before, t.dirty) : { next: 'go_on', checkpoint: t.dirty };
}

/** Between two turns, and before an attempt's first: continue-as-new when due, then the budgets. */
export function beforeNextTurn(b: BeforeTurn, dirty: boolean): Next {
  if ((b.nextTurn > b.lastTurn || b.suggested) && b.mayContinueAsNew) return { next: 'continue_as_new' };
  const over = budgetExceeded(b.used, b.budgets);
  if (over) return { next: 'stop', end: 'budget', why: over };
  return { next: 'go_on', checkpoint: dirty };
}

/** The runTool result's fields the loop reads. */
export type RanResult = (DoneCall & { status: 'done'; ok: boolean; summary: string; plan?: unknown }) | { status: 'ask' | 'denied'; summary: string };

/** A turn whose leading calls ran in the activity (`ran`, in the calls' order). */
export interface RanTurn {
  budgetStop?: string;
  /** the turn's call was not sent: a limit of the budget ledger, which only the workflow may wait on */
  overBudget?: unknown;
  calls: ReadonlyArray<{ id: string; fingerprint: string }>;
  ran?: ReadonlyArray<{ id: string; result: RanResult }>;
}

/**
 * A turn taken in the activity, read the way the workflow reads it: the stuck detector is fed
 * every call and the touched files are added to, both in place.
 */
export function outcomeOfRan(turn: RanTurn, stuck: StuckState, cycles: boolean, touched: string[]): TurnOutcome {
  if (turn.budgetStop) return { dirty: false, budgetStop: turn.budgetStop };
  if (turn.overBudget) return { dirty: false, workflowOnly: { ask: true, why: 'the next model call does not fit the budget ledger' } };
  if (!turn.calls.length) return { dirty: false, workflowOnly: { ask: false, why: 'a turn without calls: the stop gate answers it' } };
  if ((turn.ran?.length ?? 0) !== turn.calls.length) return { dirty: false, workflowOnly: { ask: false, why: 'calls the activity did not run' } };
  let dirty = false;
  for (const [i, call] of turn.calls.entries()) {
    const ran = turn.ran![i]!;
    if (ran.id !== call.id) return { dirty, workflowOnly: { ask: false, why: 'calls the activity did not run' } };
    const res = ran.result;
    if (res.status === 'ask') return { dirty, workflowOnly: { ask: true, why: res.summary } };
    if (res.status !== 'done') return { dirty, workflowOnly: { ask: false, why: `${res.status}: ${res.summary}` } };
    // the plan and a reflection are the workflow's memory of the attempt
    if (res.effect === 'plan' || res.effect === 'reflect' || res.plan) return { dirty, workflowOnly: { ask: false, why: `a ${res.effect} call` } };
    const effects = effectsOf(res);
    if (effects.dirty) dirty = true;
    for (const p of effects.touched) if (!touched.includes(p)) touched.push(p);
    const why = observeCall(stuck, { fingerprint: call.fingerprint, result: res.summary.slice(0, 300), isError: !res.ok, malformed: false }, { cycles });
    if (why) return { dirty, stuck: why };
  }
  return { dirty };
}
