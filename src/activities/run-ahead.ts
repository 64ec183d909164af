/**
 * A turn's calls run in the activity that asked the model, not one activity each: every hand-off
 * through the Temporal server costs a dispatch and a workflow task, most of a fast turn
 * (docs/bench.md). Each call still goes through runTool — the same policy check,
 * the same journal before any effect, the same stored result — so a retried turn runs nothing
 * twice. What only the workflow may decide stops the run-ahead: a call that needs a person, the
 * model's finish, a malformed call. One command at most: a command may run for the whole command
 * timeout, and the turn's timeouts allow one.
 */
import { settingsFrom } from '../settings.js';
import { addTurn, totalTokens } from '../loop/budget.js';
import { nextAfterTurn, outcomeOfRan } from '../loop/turn.js';
import { ATTEMPT_ENDING_TOOLS, COMMAND_TOOLS } from '../tools/catalog.js';
import type { AgentTurnInput, AgentTurnResult, RunningCall, RunToolInput, RunToolResult } from '../shared/contracts.js';
import { withTurnsTaken } from './failure.js';
import { activityContext, heartbeating } from './heartbeat.js';

export async function runAhead(
  inp: AgentTurnInput,
  turn: AgentTurnResult,
  runTool: (i: RunToolInput) => Promise<RunToolResult>,
): Promise<Array<{ id: string; result: RunToolResult }>> {
  const out: Array<{ id: string; result: RunToolResult }> = [];
  if (!inp.runAhead || turn.budgetStop || turn.overBudget) return out;
  let commands = 0;
  for (const call of turn.calls) {
    if (call.inputError || ATTEMPT_ENDING_TOOLS.has(call.name)) break;
    // an MCP call may take its server's whole timeout, like a command
    if ((COMMAND_TOOLS.has(call.name) || call.name.startsWith('mcp__')) && commands++ > 0) break;
    // the workflow hears of the call only when the turn ends: the live view reads it from here
    const result = await heartbeating(
      () => runTool({ runId: inp.runId, repo: inp.repo, toolUseId: call.id, grants: inp.runAhead!.grants }),
      () => ({ running: call.summary, turn: inp.turn }) satisfies RunningCall,
    );
    // an ask goes back to the workflow, which asks people and runs the call again with their answer
    if (result.status === 'ask') break;
    out.push({ id: call.id, result });
  }
  return out;
}

/**
 * How long an activity goes on starting turns. Past it, the turn's results go to the workflow:
 * the live view, the Web UI and a person's signals see the run at least this often. A turn whose
 * model call takes seconds always hands back, and a hand-off then costs under 1% of its time.
 */
export const TURNS_AHEAD_MS = 1000;
/** and how many turns one activity's result carries at most (each is a few hundred bytes of history) */
export const MAX_TURNS_AHEAD = 32;

/** The worker's KILN_TURNS_AHEAD_MS, in ms (0: every turn goes back to the workflow). */
export function turnsAheadMs(env: NodeJS.ProcessEnv): number {
  return settingsFrom(env).turnsAheadMs ?? TURNS_AHEAD_MS;
}

/**
 * The turns after the first that this activity takes itself (a turn through the server costs a
 * hand-off, ~9 ms here, more than the rest of a fast turn). The next turn starts only when the
 * turn loop (loop/turn.ts, the decision the workflow takes on the same turn) says go on, and
 * within this activity's own bounds of turns and time while the run is not being cancelled.
 * Every turn is the same `take` as the first — stored replies and stored results make a retried
 * activity walk the same turns again at no cost.
 */
export async function turnsAhead(
  inp: AgentTurnInput,
  first: AgentTurnResult,
  take: (i: AgentTurnInput) => Promise<AgentTurnResult>,
  limitMs: number = TURNS_AHEAD_MS,
  now: () => number = Date.now,
): Promise<AgentTurnResult[]> {
  const ahead = inp.runAhead?.turns;
  if (!ahead || limitMs <= 0) return [];
  const started = now();
  const used = { ...ahead.used };
  const stuck = structuredClone(ahead.stuck);
  const touched = [...(inp.memory?.touchedFiles ?? [])];
  const out: AgentTurnResult[] = [];
  let turn = first;
  for (let n = inp.turn; ; n++) {
    addTurn(used, turn.usage, turn.costUsd);
    const elapsed = now() - started;
    const next = nextAfterTurn(outcomeOfRan(turn, stuck, ahead.cycles, touched), {
      nextTurn: n + 1,
      lastTurn: ahead.lastTurn,
      mayContinueAsNew: true,
      used: { ...used, wallMs: ahead.used.wallMs + elapsed },
      budgets: ahead.budgets,
    });
    if (next.next !== 'go_on') break;
    // this activity's own bounds: the workflow hears of the turns at least this often
    if (out.length >= MAX_TURNS_AHEAD || elapsed >= limitMs || cancelled()) break;
    try {
      turn = await take({
        runId: inp.runId,
        repo: inp.repo,
        turn: n + 1,
        attempt: inp.attempt,
        checkpoint: next.checkpoint,
        ...(inp.memory ? { memory: { ...inp.memory, touchedFiles: [...touched] } } : {}),
        tokensLeft: Math.max(0, ahead.budgets.maxTokens - totalTokens(used)),
        ...(inp.ledger ? { ledger: inp.ledger } : {}),
        runAhead: { grants: inp.runAhead!.grants },
      });
    } catch (err) {
      // the failed turn costs what it costs as an activity of its own: Temporal's retry policy
      // paces it (retry-after, backoff) and a non-retryable fault ends it at once. A retry walks
      // the turns before it again from what they stored, at no cost; a failure that is final
      // hands them to the workflow in its details
      if (cancelled()) throw err;
      throw withTurnsTaken(err, out.length ? { ...first, more: out } : first);
    }
    out.push(turn);
  }
  return out;
}

function cancelled(): boolean {
  return activityContext()?.cancellationSignal.aborted ?? false;
}
