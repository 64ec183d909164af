/**
 * One attempt of the agent loop: model turns and their tool calls until the agent finishes, is
 * stuck, or a budget or an approval runs out. The run (./run.ts) decides what follows. What
 * follows each turn is the turn loop's decision (../loop/turn.ts), the same one the turn activity
 * takes when it goes on to the next turns itself; this file acts on it, and owns what only the
 * workflow may do: the phases, asking people, the stop gate's answers, continue-as-new.
 */
import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { AgentTurnInput, AgentTurnResult, RunToolResult, ToolCallView, TurnsAhead } from '../shared/contracts.js';
import { DEFAULT_TURNS_PER_RUN } from '../shared/types.js';
import { addSpend, totalTokens } from '../loop/budget.js';
import { ledgerRef, parkForBudget } from './budget-park.js';
import { gateSatisfied, missingChecks, recordDone, type LoopState } from '../loop/state.js';
import { observeCall, observeIdleTurn } from '../loop/stuck.js';
import { beforeNextTurn, nextAfterTurn, type BeforeTurn, type Next } from '../loop/turn.js';
import type { RunContext } from './context.js';
import { addUsage, observe, touch } from './machine.js';
import { modelOptions, turnAheadOptions, turnsTakenBefore } from './options.js';
import type { kilnRun } from './run.js';
import { toolDenied, turnDone } from './metrics.js';
import { outcomeSuffix, prefetchReads, runOneTool, type ToolOutcome } from './tool-calls.js';
import { ATTEMPT_ENDING_TOOLS, EDIT_TOOLS, READ_ONLY_TOOLS, REFLECTION_TOOLS } from '../tools/catalog.js';

export type AttemptEnd =
  | { kind: 'finished'; gateSatisfied: boolean }
  | { kind: 'stuck'; why: string }
  | { kind: 'budget'; which: string }
  | { kind: 'approval_timeout'; approvalId: string };

export async function runAttempt(ctx: RunContext, loop: LoopState): Promise<AttemptEnd> {
  const { state } = ctx;
  if (state.phase !== 'planning' && state.phase !== 'editing') ctx.phase(state.attempt === 1 && state.turn === 0 ? 'planning' : 'editing');
  for (;;) {
    // pre-approvals that arrived during the last turn reach the audit before the next one starts
    await ctx.auditPreApprovals();
    const before = beforeNextTurn(beforeTurn(ctx), loop.dirty);
    if (before.next === 'continue_as_new') await continueAsNewNow(ctx, loop);
    state.budget.wallMs = ctx.elapsedMs();
    if (before.next === 'stop') return { kind: 'budget', which: before.why };

    state.turn += 1;
    // the turn runs its calls in the same activity while they are the worker's to decide; a retry
    // that must reflect first keeps one activity per call, since the calls below bounce them
    const ahead = !loop.needReflection;
    const { first, failed } = await takeTurns(ctx, loop, ahead);
    // the turns the activity went on to take (activities/run-ahead.ts): each is read as if it had
    // its own activity, and what lies between them the activity checked
    for (const [i, turn] of [first, ...(first.more ?? [])].entries()) {
      if (i > 0) state.turn += 1;
      const end = await readTurn(ctx, loop, turn, ahead);
      if (end) return end;
    }
    if (failed) {
      // the turn that failed after them is the run's last, as if it had been an activity of its own
      state.turn += 1;
      throw failed.err;
    }
  }
}

/** The turn activity's turns; when a later turn failed for good, the turns before it and that failure. */
async function takeTurns(ctx: RunContext, loop: LoopState, ahead: boolean): Promise<{ first: AgentTurnResult; failed?: { err: unknown } }> {
  try {
    return { first: await takeTurn(ctx, loop, ahead) };
  } catch (err) {
    const taken = turnsTakenBefore(err);
    if (!taken) throw err;
    return { first: taken, failed: { err } };
  }
}

/** What the turn loop checks before the next turn, as this run holds it. */
function beforeTurn(ctx: RunContext): BeforeTurn {
  const { state, input } = ctx;
  return {
    nextTurn: state.turn + 1,
    lastTurn: ctx.turnAtRunStart + (input.turnsPerRun ?? DEFAULT_TURNS_PER_RUN),
    suggested: workflowInfo().continueAsNewSuggested,
    mayContinueAsNew: !state.pendingApprovals.length,
    used: { ...state.budget, wallMs: ctx.elapsedMs() },
    budgets: input.budgets,
  };
}

/** Continue-as-new between turns; nothing is lost. Does not return. */
async function continueAsNewNow(ctx: RunContext, loop: LoopState): Promise<never> {
  const { state, input } = ctx;
  const events = workflowInfo().historyLength;
  await condition(allHandlersFinished);
  await ctx.auditPreApprovals();
  ctx.note('note', `continuing as new after turn ${state.turn} (history ${events} events)`);
  return continueAsNew<typeof kilnRun>(input, ctx.snapshot(loop));
}

/** One model turn; ahead, its activity also runs the calls and may go on to the next turns (what it needs to check between them). */
function takeTurn(ctx: RunContext, loop: LoopState, ahead: boolean): Promise<AgentTurnResult> {
  const { state, input } = ctx;
  const turns: TurnsAhead = {
    lastTurn: ctx.turnAtRunStart + (input.turnsPerRun ?? DEFAULT_TURNS_PER_RUN),
    budgets: input.budgets,
    used: { ...state.budget },
    stuck: loop.stuck,
    cycles: true,
  };
  const args: AgentTurnInput = {
    ...ctx.ref(),
    events: ctx.takeUnwritten(),
    turn: state.turn,
    attempt: state.attempt,
    userText: loop.userText,
    toolResults: loop.toolResults,
    checkpoint: loop.dirty,
    memory: { plan: state.plan, touchedFiles: state.touchedFiles, failures: ctx.failures },
    tokensLeft: Math.max(0, input.budgets.maxTokens - totalTokens(state.budget)),
    ledger: ledgerRef(ctx),
    ...(ahead ? { runAhead: { grants: state.grants, turns } } : {}),
  };
  return ctx.host!.agentTurn.executeWithOptions({ ...(ahead ? turnAheadOptions(input) : modelOptions(input)), summary: `turn ${state.turn}: model` }, [args]);
}

/** The turn loop's decision as an end of the attempt; undefined: go on. */
function endOf(next: Next): AttemptEnd | undefined {
  if (next.next === 'verify') return { kind: 'finished', gateSatisfied: next.gateSatisfied };
  if (next.next === 'stop') return next.end === 'budget' ? { kind: 'budget', which: next.why } : { kind: 'stuck', why: next.why };
  // go on; asking people and answering the model happened within the turn
  return undefined;
}

/** What the workflow makes of one turn's reply and its calls; an end of the attempt, or undefined to go on. */
async function readTurn(ctx: RunContext, loop: LoopState, turn: AgentTurnResult, ahead: boolean): Promise<AttemptEnd | undefined> {
  if (turn.budgetStop) {
    // the turn's input alone would overshoot the token budget: it did not start
    ctx.state.turn -= 1;
    return endOf(nextAfterTurn({ budgetStop: turn.budgetStop, dirty: loop.dirty }));
  }
  if (turn.overBudget) {
    // not sent: the same turn is taken again once a person lets it (replies refused before it were billed)
    ctx.state.turn -= 1;
    addSpend(ctx.state.budget, turn.usage, turn.costUsd);
    return parkForBudget(ctx, turn.overBudget);
  }
  recordTurn(ctx, loop, turn);
  const checks = ctx.prep!.checks;
  let finished = false;
  if (turn.calls.length === 0) {
    // an end_turn without finish counts as a finish attempt
    const idle = idleTurn(ctx, loop);
    if (idle === 'finished') finished = true;
    else if (idle) return endOf(nextAfterTurn({ stuck: idle, dirty: loop.dirty }));
  }
  const prefetched = ahead ? new Map((turn.ran ?? []).map((r) => [r.id, r.result])) : await prefetchReads(ctx, ctx.host!, turn.calls);
  for (const call of turn.calls) {
    const outcome = await readCall(ctx, loop, call, prefetched.get(call.id), finished);
    if (outcome.kind === 'approval_timeout') return outcome;
    finished ||= outcome.finished;
    const stuck = observeCall(loop.stuck, { fingerprint: call.fingerprint, ...outcome.seen }, { cycles: true });
    if (stuck && !finished) return endOf(nextAfterTurn({ stuck, dirty: loop.dirty }));
  }
  ctx.showFleet();
  return endOf(nextAfterTurn({ ...(finished ? { finished: { gateSatisfied: gateSatisfied(loop, checks) } } : {}), dirty: loop.dirty }));
}

/** The turn's usage, checkpoint and log lines; the next turn's input starts empty. */
function recordTurn(ctx: RunContext, loop: LoopState, turn: AgentTurnResult): void {
  const { state } = ctx;
  loop.userText = undefined;
  loop.toolResults = {};
  if (turn.checkpoint) {
    loop.dirty = false;
    if ('patch' in turn.checkpoint) ctx.checkpoint = turn.checkpoint;
    else {
      ctx.checkpoint = undefined;
      ctx.note('note', `checkpoint skipped: the patch is ${turn.checkpoint.tooLarge} bytes; a host loss would rebuild from the base`);
    }
  }
  addUsage(state, turn.usage, turn.costUsd);
  turnDone(turn.usage, turn.costUsd);
  state.recentTurns = [...(state.recentTurns ?? []), { turn: state.turn, ...turn.usage, costUsd: turn.costUsd }].slice(-20);
  if (turn.text) observe(state, turn.text);
  if (turn.compacted)
    ctx.note('note', `compacted ${turn.compacted.removedMessages} older messages (${turn.compacted.beforeTokens} → ${turn.compacted.afterTokens} tokens)`);
  if (state.phase === 'planning' && turn.calls.some((c) => !READ_ONLY_TOOLS.has(c.name))) ctx.phase('editing');
  // the turn line says what the model said; each call gets its own line with its outcome
  ctx.note('turn', `turn ${state.turn}${turn.text ? `: ${turn.text.split('\n')[0]!.slice(0, 160)}` : turn.calls.length ? '' : ` (${turn.stopReason})`}`);
}

/** A turn without calls: 'finished' when the stop gate lets it, else why it is stuck, or undefined after answering it. */
function idleTurn(ctx: RunContext, loop: LoopState): 'finished' | string | undefined {
  if (loop.needReflection) {
    loop.userText = 'Reflect first: this is a retry; call reflect before anything else.';
    ctx.note('note', 'reflection required before finishing');
  } else if (gateSatisfied(loop, ctx.prep!.checks)) return 'finished';
  else {
    loop.userText = gateAnswer(loop, ctx.prep!.checks);
    ctx.note('note', gateNote(loop, ctx.prep!.checks));
  }
  return observeIdleTurn(loop.stuck);
}

/** The stop gate's answer to a finish it refuses: the files really edited and the checks still missing. */
function gateAnswer(loop: LoopState, checks: readonly string[]): string {
  const edited = loop.editedFiles?.length ? `You edited ${loop.editedFiles.join(', ')}` : 'Files changed';
  return `The stop gate: run the checks first. ${edited} since the checks last ran; run ${missingChecks(loop, checks).join(' and ')} with run_command (each on its own, or the whole line joined with &&), then call finish.`;
}

function gateNote(loop: LoopState, checks: readonly string[]): string {
  return `stop gate: finish refused: not run since the last edit: ${missingChecks(loop, checks).join(', ')}`;
}

type CallRead =
  { kind: 'read'; finished: boolean; seen: { result: string; isError: boolean; malformed: boolean } } | Extract<ToolOutcome, { kind: 'approval_timeout' }>;

/** One call of the turn: answered by the workflow's own protocol, or run (`early`: it already ran in the turn's activity). */
async function readCall(ctx: RunContext, loop: LoopState, call: ToolCallView, early: RunToolResult | undefined, finishedBefore: boolean): Promise<CallRead> {
  // the workflow's own answer goes back to the model as the call's result
  const answer = (text: string, isError: boolean, malformed = false): CallRead => {
    loop.toolResults[call.id] = { content: text, isError };
    return { kind: 'read', finished: false, seen: { result: text.slice(0, 300), isError, malformed } };
  };
  if (call.inputError) {
    ctx.note('tool', `${call.summary}: invalid call`);
    if (REFLECTION_TOOLS.has(call.name) && loop.needReflection) loop.reflectionBounces += 1;
    return answer(call.inputError, true, true);
  }
  if (loop.needReflection && !READ_ONLY_TOOLS.has(call.name) && !REFLECTION_TOOLS.has(call.name)) {
    // a retry starts with a reflection, whatever ended the attempt: no edit, command or finish before it
    ctx.note('note', `reflection required before ${call.name}`);
    return answer(
      'Reflect first: this is a retry; call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files before anything else.',
      true,
    );
  }
  if (ATTEMPT_ENDING_TOOLS.has(call.name)) {
    const checks = ctx.prep!.checks;
    const ok = gateSatisfied(loop, checks);
    const text = ok ? 'Kiln will now verify your work.' : gateAnswer(loop, checks);
    loop.toolResults[call.id] = { content: text, isError: !ok };
    ctx.note(ok ? 'tool' : 'note', ok ? call.summary : gateNote(loop, checks));
    // a refused finish after one the gate let through in the same turn is no error to the stuck detector
    return { kind: 'read', finished: ok, seen: { result: text.slice(0, 300), isError: !(ok || finishedBefore), malformed: false } };
  }
  if (loop.needReflection && EDIT_TOOLS.has(call.name) && loop.reflectionBounces < 1) {
    // once per retry: edits wait for a reflection; after one bounce the coder may go on
    loop.reflectionBounces += 1;
    ctx.note('note', 'reflection required before editing');
    return answer(
      'Reflect first: before editing in a retry, call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files.',
      true,
    );
  }
  if (early) ctx.note('tool', `${call.summary}${outcomeSuffix(early)}`);
  const outcome: ToolOutcome = early ? { kind: 'done', result: early } : await runOneTool(ctx, ctx.host!, call);
  if (outcome.kind === 'approval_timeout') return outcome;
  const res = outcome.result;
  if (res.status === 'done') {
    for (const p of recordDone(loop, res, ctx.prep!.checks)) touch(ctx.state, p);
    if (res.plan) ctx.state.plan = res.plan;
    observe(ctx.state, res.summary);
  }
  if (res.status === 'denied') {
    ctx.fail(`denied: ${res.summary} (${res.rule})`);
    toolDenied(call.name, res.rule);
  }
  return { kind: 'read', finished: false, seen: { result: res.summary.slice(0, 300), isError: res.status !== 'done' || !res.ok, malformed: false } };
}
