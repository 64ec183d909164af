/**
 * The "same tools, no Temporal" baseline: the very activity functions the worker registers,
 * called in a plain loop in this process. MockActivityEnvironment only supplies the activity
 * Context they read (cancellation signal, heartbeat); no server, no task queues, no history.
 * The loop keeps the workflow's bookkeeping that costs something real (log lines handed to the
 * activities for events.jsonl, the stop gate), so the difference left is Temporal's.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type ActivityDeps } from '../src/activities/index.js';
import { useSpawner } from '../src/process/spawn.js';
import type { RunInput, RunState } from '../src/shared/types.js';
import { addUsage, initialState, log, observe, setPhase, touch } from '../src/workflows/machine.js';

export interface InProcessResult {
  state: RunState;
  verdictPass: boolean;
  patchPath: string;
}

export async function runInProcess(input: RunInput, deps: ActivityDeps): Promise<InProcessResult> {
  // the same activities as the worker runs them: programs start through its spawner
  const releaseSpawner = useSpawner();
  try {
    return await loop(input, deps);
  } finally {
    releaseSpawner();
  }
}

async function loop(input: RunInput, deps: ActivityDeps): Promise<InProcessResult> {
  const acts = createActivities(deps);
  const env = new MockActivityEnvironment();
  // MockActivityEnvironment.run loses the activity's return type; this keeps it
  const act = <A extends unknown[], R>(fn: (...a: A) => Promise<R>, ...args: A): Promise<R> => env.run(fn, ...args) as Promise<R>;
  const state = initialState(input);
  const now = () => new Date().toISOString();
  let unwritten = 0;
  const note = (kind: Parameters<typeof log>[2], text: string) => {
    log(state, now(), kind, text);
    unwritten++;
  };
  const ref = { runId: input.runId, repo: input.repo };
  // the log lines no activity has written yet ride with the next one, as the workflow's do
  const takeUnwritten = () => {
    const events = state.log.slice(Math.max(0, state.log.length - unwritten));
    unwritten = 0;
    return events;
  };

  setPhase(state, 'preparing', now());
  unwritten++;
  const prep = await act(acts.prepareWorkspace, input);
  if (!prep.ok) throw new Error(`prepareWorkspace failed: ${prep.reason}`);
  setPhase(state, 'planning', now());
  unwritten++;

  let toolResults: Record<string, { content: string; isError: boolean }> = {};
  let editedSinceChecks = false;
  const checksSinceEdit = new Set<string>();
  const gateSatisfied = () => !editedSinceChecks || prep.checks.every((c) => checksSinceEdit.has(c));
  for (let finished = false; !finished;) {
    if (state.turn >= input.budgets.maxTurns) throw new Error(`in-process loop: maxTurns (${input.budgets.maxTurns}) reached`);
    state.turn += 1;
    const turn = await act(acts.agentTurn, { ...ref, events: takeUnwritten(), turn: state.turn, attempt: state.attempt, toolResults });
    toolResults = {};
    addUsage(state, turn.usage, turn.costUsd);
    note('turn', `turn ${state.turn}: ${turn.calls.map((c) => c.summary).join('; ')}`);
    if (turn.calls.length === 0) finished = gateSatisfied();
    for (const call of turn.calls) {
      if (call.inputError) {
        toolResults[call.id] = { content: call.inputError, isError: true };
        continue;
      }
      if (call.name === 'finish') {
        finished = gateSatisfied();
        toolResults[call.id] = { content: finished ? 'Kiln will now verify your work.' : 'The stop gate: run the checks first.', isError: !finished };
        continue;
      }
      const res = await act(acts.runTool, { ...ref, events: takeUnwritten(), toolUseId: call.id, grants: state.grants });
      if (res.status !== 'done') throw new Error(`in-process loop: ${call.summary} was ${res.status} (${res.rule}); the benchmark's calls must be allowed`);
      note('tool', `${call.summary}${res.ok ? '' : ' — failed'}`);
      if (res.effect === 'edit' && res.path) {
        touch(state, res.path);
        editedSinceChecks = true;
        checksSinceEdit.clear();
      }
      if (res.checkRan) checksSinceEdit.add(res.checkRan);
      observe(state, res.summary);
    }
  }

  setPhase(state, 'verifying', now());
  unwritten++;
  const verdict = await act(acts.verify, { ...ref, events: takeUnwritten(), attempt: state.attempt, gateSatisfied: gateSatisfied() });
  state.verdict = verdict;
  setPhase(state, verdict.pass ? 'succeeded' : 'blocked', now(), verdict.pass ? undefined : verdict.summary);
  unwritten++;
  const fin = await act(acts.finalizeRun, { ...ref, events: takeUnwritten(), state, removeWorktree: true });
  return { state, verdictPass: verdict.pass, patchPath: fin.patchPath };
}
