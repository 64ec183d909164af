/**
 * One attempt of the agent loop: model turns and their tool calls until the agent finishes, is
 * stuck, or a budget or an approval runs out. The run (./run.ts) decides what follows.
 */
import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { AgentTurnResult, RunToolResult, ToolCallView, TurnsAhead } from '../activities/contracts.js';
import { DEFAULT_TURNS_PER_RUN } from '../shared/types.js';
import { askPeople, type Answer } from './approvals.js';
import type { LoopState, RunContext } from './context.js';
import { addUsage, budgetExceeded, observe, totalTokens, touch } from './machine.js';
import { modelOptions, toolOptions, turnAheadOptions, type Acts } from './options.js';
import type { kilnRun } from './run.js';
import { observeCall, observeIdleTurn } from './stuck.js';
import { toolDenied, turnDone } from './metrics.js';
import { EDIT_TOOLS, READ_ONLY_TOOLS } from '../tools/catalog.js';

/** The model's way to end an attempt (the stop gate may refuse it), and the reflection a retry starts with: the workflow's own protocol. */
const FINISH_TOOL = 'finish';
const REFLECT_TOOL = 'reflect';

export type AttemptEnd =
  | { kind: 'finished'; gateSatisfied: boolean }
  | { kind: 'stuck'; why: string }
  | { kind: 'budget'; which: string }
  | { kind: 'approval_timeout'; approvalId: string };

type ToolOutcome = { kind: 'done'; result: RunToolResult } | { kind: 'approval_timeout'; approvalId: string };

export async function runAttempt(ctx: RunContext, loop: LoopState): Promise<AttemptEnd> {
  const { state, input } = ctx;
  const acts = ctx.host!;
  const checks = ctx.prep!.checks;
  if (state.phase !== 'planning' && state.phase !== 'editing') ctx.phase(state.attempt === 1 && state.turn === 0 ? 'planning' : 'editing');
  // The stop gate: after an edit, finish waits until every check has run again.
  const gateSatisfied = () => !loop.editedSinceChecks || checks.every((c) => loop.checksSinceEdit.includes(c));
  const missing = () => checks.filter((c) => !loop.checksSinceEdit.includes(c)).map((c) => `\`${c}\``);
  // the answer names the files really edited and the checks still missing
  const gateAnswer = () =>
    `The stop gate: run the checks first. ${loop.editedFiles?.length ? `You edited ${loop.editedFiles.join(', ')}` : 'Files changed'} since the checks last ran; run ${missing().join(' and ')} with run_command (each on its own, or the whole line joined with &&), then call finish.`;
  const gateNote = () => `stop gate: finish refused: not run since the last edit: ${missing().join(', ')}`;

  // what the workflow checks between turns, for the activity to check in its place
  const betweenTurns = (): TurnsAhead => ({
    lastTurn: ctx.turnAtRunStart + (input.turnsPerRun ?? DEFAULT_TURNS_PER_RUN),
    budgets: input.budgets,
    used: { ...state.budget },
    stuck: loop.stuck,
    cycles: true,
  });

  // A check added between turns below must also reach the activity (betweenTurns, and goesOn in
  // activities/run-ahead.ts): the turns it goes on to take do not come back through here.
  for (;;) {
    // pre-approvals that arrived during the last turn reach the audit before the next one starts
    await ctx.auditPreApprovals();
    await maybeContinueAsNew(ctx, loop);
    state.budget.wallMs = ctx.elapsedMs();
    const over = budgetExceeded(state.budget, input.budgets);
    if (over) return { kind: 'budget', which: over };

    state.turn += 1;
    // the turn runs its calls in the same activity while they are the worker's to decide; a retry
    // that must reflect first keeps one activity per call, since the loop below bounces them
    const ahead = !loop.needReflection;
    const first = await acts.agentTurn.executeWithOptions(
      { ...(ahead ? turnAheadOptions(input) : modelOptions(input)), summary: `turn ${state.turn}: model` },
      [
        {
          ...ctx.ref(),
          turn: state.turn,
          attempt: state.attempt,
          userText: loop.userText,
          toolResults: loop.toolResults,
          checkpoint: loop.dirty,
          memory: { plan: state.plan, touchedFiles: state.touchedFiles, failures: ctx.failures },
          tokensLeft: Math.max(0, input.budgets.maxTokens - totalTokens(state.budget)),
          ...(ahead ? { runAhead: { grants: state.grants, turns: betweenTurns() } } : {}),
        },
      ],
    );
    // the turns the activity went on to take (run-ahead.ts): each is seen as if it had its own
    // activity, started by this loop without the checks the activity made for it
    for (const [i, turn] of [first, ...(first.more ?? [])].entries()) {
      if (i > 0) state.turn += 1;
      const end = await afterTurn(turn, ahead);
      if (end) return end;
    }
  }

  /** What the workflow makes of one turn's reply and its calls; an end of the attempt, or undefined to go on. */
  async function afterTurn(turn: AgentTurnResult, ahead: boolean): Promise<AttemptEnd | undefined> {
    if (turn.budgetStop) {
      // the turn's input alone would overshoot the token budget: it did not start
      state.turn -= 1;
      return { kind: 'budget', which: turn.budgetStop };
    }
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

    let finished = false;
    if (turn.calls.length === 0) {
      // An end_turn without finish counts as a finish attempt.
      if (loop.needReflection) {
        loop.userText = 'Reflect first: this is a retry; call reflect before anything else.';
        ctx.note('note', 'reflection required before finishing');
        const stuck = observeIdleTurn(loop.stuck);
        if (stuck) return { kind: 'stuck', why: stuck };
      } else if (gateSatisfied()) finished = true;
      else {
        loop.userText = gateAnswer();
        ctx.note('note', gateNote());
        const stuck = observeIdleTurn(loop.stuck);
        if (stuck) return { kind: 'stuck', why: stuck };
      }
    }

    const prefetched = ahead ? new Map((turn.ran ?? []).map((r) => [r.id, r.result])) : await prefetchReads(ctx, acts, turn.calls);
    for (const call of turn.calls) {
      let result: { text: string; isError: boolean; malformed: boolean };
      if (call.inputError) {
        loop.toolResults[call.id] = { content: call.inputError, isError: true };
        ctx.note('tool', `${call.summary}: invalid call`);
        if (call.name === REFLECT_TOOL && loop.needReflection) loop.reflectionBounces += 1;
        result = { text: call.inputError, isError: true, malformed: true };
      } else if (loop.needReflection && !READ_ONLY_TOOLS.has(call.name) && call.name !== REFLECT_TOOL) {
        // a retry starts with a reflection, whatever ended the attempt: no edit, command or finish before it
        const text =
          'Reflect first: this is a retry; call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files before anything else.';
        loop.toolResults[call.id] = { content: text, isError: true };
        ctx.note('note', `reflection required before ${call.name}`);
        result = { text, isError: true, malformed: false };
      } else if (call.name === FINISH_TOOL) {
        if (gateSatisfied()) {
          finished = true;
          loop.toolResults[call.id] = { content: 'Kiln will now verify your work.', isError: false };
          ctx.note('tool', call.summary);
        } else {
          loop.toolResults[call.id] = { content: gateAnswer(), isError: true };
          ctx.note('note', gateNote());
        }
        result = { text: loop.toolResults[call.id]!.content, isError: !finished, malformed: false };
      } else if (loop.needReflection && EDIT_TOOLS.has(call.name) && loop.reflectionBounces < 1) {
        // once per retry: edits wait for a reflection; after one bounce the coder may go on
        loop.reflectionBounces += 1;
        const text = 'Reflect first: before editing in a retry, call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files.';
        loop.toolResults[call.id] = { content: text, isError: true };
        ctx.note('note', 'reflection required before editing');
        result = { text, isError: true, malformed: false };
      } else {
        const early = prefetched.get(call.id);
        if (early) ctx.note('tool', `${call.summary}${outcomeSuffix(early)}`);
        const outcome: ToolOutcome = early ? { kind: 'done', result: early } : await runOneTool(ctx, acts, call);
        if (outcome.kind === 'approval_timeout') return outcome;
        const res = outcome.result;
        if (res.status === 'done') {
          if (res.effect === 'edit' || res.effect === 'command') loop.dirty = true;
          if (res.effect === 'edit' && res.path) {
            touch(state, res.path);
            loop.editedSinceChecks = true;
            loop.checksSinceEdit = [];
            loop.editedFiles = [...new Set([...(loop.editedFiles ?? []), res.path])];
          }
          if (res.changedPaths?.length) {
            // sed -i, a formatter, a generator: a command's changes are edits for the gate and touchedFiles
            for (const p of res.changedPaths) touch(state, p);
            loop.editedSinceChecks = true;
            loop.checksSinceEdit = [];
          }
          if (res.effect === 'reflect') loop.needReflection = false;
          // a command counts for every check it ran (`a && b`); older results name one at most
          const ran = res.checksRan ? res.checksRan : res.checkRan ? [res.checkRan] : [];
          for (const c of ran) if (!loop.checksSinceEdit.includes(c)) loop.checksSinceEdit.push(c);
          if (ran.length && loop.editedFiles && checks.every((c) => loop.checksSinceEdit.includes(c))) loop.editedFiles = [];
          if (res.plan) state.plan = res.plan;
          observe(state, res.summary);
        }
        const isError = res.status !== 'done' || !res.ok;
        result = { text: res.summary, isError, malformed: false };
        if (res.status === 'denied') {
          ctx.fail(`denied: ${res.summary} (${res.rule})`);
          toolDenied(call.name, res.rule);
        }
      }
      const stuck = observeCall(
        loop.stuck,
        { fingerprint: call.fingerprint, result: result.text.slice(0, 300), isError: result.isError, malformed: result.malformed },
        { cycles: true },
      );
      if (stuck && !finished) return { kind: 'stuck', why: stuck };
    }
    ctx.showFleet();
    if (finished) return { kind: 'finished', gateSatisfied: gateSatisfied() };
    return undefined;
  }
}

/** Continue-as-new between turns, once this run's history has grown enough; nothing is lost. */
async function maybeContinueAsNew(ctx: RunContext, loop: LoopState): Promise<void> {
  const { state, input } = ctx;
  const info = workflowInfo();
  if (state.turn - ctx.turnAtRunStart < (input.turnsPerRun ?? DEFAULT_TURNS_PER_RUN) && !info.continueAsNewSuggested) return;
  if (state.pendingApprovals.length) return;
  await condition(allHandlersFinished);
  await ctx.auditPreApprovals();
  ctx.note('note', `continuing as new after turn ${state.turn} (history ${info.historyLength} events)`);
  await continueAsNew<typeof kilnRun>(input, ctx.snapshot(loop));
}

/**
 * The reads a turn starts with run in one activity instead of one each (they cannot need an
 * approval, and nothing before them changes the worktree).
 */
async function prefetchReads(ctx: RunContext, acts: Acts, calls: ToolCallView[]): Promise<Map<string, RunToolResult>> {
  const lead: ToolCallView[] = [];
  for (const c of calls) {
    if (c.inputError || !READ_ONLY_TOOLS.has(c.name)) break;
    lead.push(c);
  }
  if (lead.length < 2) return new Map();
  const results = await acts.runTools.executeWithOptions(
    {
      ...toolOptions(ctx.input),
      summary: `turn ${ctx.state.turn}: ${lead
        .map((c) => c.summary)
        .join('; ')
        .slice(0, 200)}`,
    },
    [{ ...ctx.ref(), toolUseIds: lead.map((c) => c.id), grants: ctx.state.grants }],
  );
  return new Map(results.filter((r) => r.result.status !== 'ask').map((r) => [r.id, r.result]));
}

/** One tool call; when the policy asks, the call waits for a person's decision or its timeout. */
async function runOneTool(ctx: RunContext, acts: Acts, call: ToolCallView): Promise<ToolOutcome> {
  const { state, input } = ctx;
  const exec = (approvedHash?: string) =>
    acts.runTool.executeWithOptions({ ...toolOptions(input), summary: `turn ${state.turn}: ${call.summary}` }, [
      { ...ctx.ref(), toolUseId: call.id, approvedHash, grants: state.grants },
    ]);
  // a command may run for minutes: the live view shows it when it starts, not only when it ends
  if (call.name === 'run_command') ctx.note('tool', `${call.summary} … running`);
  const res = await exec();
  if (res.status !== 'ask') {
    ctx.note('tool', `${call.summary}${outcomeSuffix(res)}`);
    return { kind: 'done', result: res };
  }
  const answer = await askPeople(ctx, call, res);
  if (answer.kind === 'timeout') return { kind: 'approval_timeout', approvalId: answer.approvalId };
  return afterDecision(ctx, acts, call, answer, exec);
}

/** A decided approval: a rejection goes back to the model; an approval runs the call it was given for (its hash). */
async function afterDecision(
  ctx: RunContext,
  acts: Acts,
  call: ToolCallView,
  d: Omit<Extract<Answer, { kind: 'decided' }>, 'kind' | 'approvalId'>,
  exec: (approvedHash?: string) => Promise<RunToolResult>,
): Promise<ToolOutcome> {
  const { state } = ctx;
  ctx.approvedBy(...d.approvers);
  ctx.phase('editing');
  if (!d.approve) {
    const why = d.reason?.trim() || 'no reason given';
    const rejected = await acts.recordToolResult({
      ...ctx.ref(),
      toolUseId: call.id,
      content: `A person (${d.by}) rejected this call: ${why}. Do not retry it as is; find another way or explain.`,
      isError: true,
    });
    return { kind: 'done', result: rejected };
  }
  if (d.scope === 'run' && d.grantKey && !state.grants.includes(d.grantKey)) {
    state.grants.push(d.grantKey);
  }
  const result = await exec(d.hash);
  ctx.note('tool', `${call.summary}${outcomeSuffix(result)}`);
  return { kind: 'done', result };
}

/** " → exit code 1", " — denied (rule)", " — failed": what a person scanning the live log needs. */
function outcomeSuffix(res: RunToolResult): string {
  if (res.status === 'denied') return ` — denied (${res.rule})`;
  if (res.status !== 'done') return '';
  const command = / → ([^:]+)/.exec(res.summary)?.[1];
  if (command) return ` → ${command}`;
  if (res.recovered) return ' (already applied before a restart)';
  return res.ok ? '' : ` — failed: ${res.summary.split(': ').slice(1).join(': ').slice(0, 120)}`;
}
