/**
 * A turn's calls run in the activity that asked the model, not one activity each: every hand-off
 * through the Temporal server costs a dispatch and a workflow task (issue 14: ~120 ms a turn of a
 * ~220 ms turn went to hand-offs). Each call still goes through runTool — the same policy check,
 * the same journal before any effect, the same stored result — so a retried turn runs nothing
 * twice. What only the workflow may decide stops the run-ahead: a call that needs a person, the
 * model's finish, a malformed call. One command at most: a command may run for the whole command
 * timeout, and the turn's timeouts allow one.
 */
import type { AgentTurnInput, AgentTurnResult, RunningCall, RunToolInput, RunToolResult } from './contracts.js';
import { heartbeating } from './heartbeat.js';

/** The workflow's own protocol: its stop gate answers finish. */
const WORKFLOW_TOOLS = new Set(['finish']);

export async function runAhead(
  inp: AgentTurnInput,
  turn: AgentTurnResult,
  runTool: (i: RunToolInput) => Promise<RunToolResult>,
): Promise<Array<{ id: string; result: RunToolResult }>> {
  const out: Array<{ id: string; result: RunToolResult }> = [];
  if (!inp.runAhead || turn.budgetStop) return out;
  let commands = 0;
  for (const call of turn.calls) {
    if (call.inputError || WORKFLOW_TOOLS.has(call.name)) break;
    if (call.name === 'run_command' && commands++ > 0) break;
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
