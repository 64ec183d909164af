/**
 * Parallel attempts (`kiln run --attempts N`): the run is the parent of N child runs of the same
 * goal from the same base, each a whole run of its own (its worktree on whichever worker takes
 * it, its verification, its approvals). The first child that succeeds wins; the others are
 * cancelled and wait for their clean-up (worktree, sandbox) before the parent ends. A child never
 * outlives its parent: cancelling the parent cancels them, and the server asks them to cancel
 * when the parent closes in any other way (ParentClosePolicy).
 *
 * The parent has no worktree and runs no activity. Its phases are its own small machine:
 * preparing (starting children) → planning (children at work) → succeeded | blocked | cancelled.
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowCancellationType,
  ParentClosePolicy,
  isCancellation,
  setHandler,
  startChild,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import { KilnTenant } from '../shared/search-attributes.js';
import { cancelRequestSignal, childSpendSignal, statusQuery } from '../shared/messages.js';
import type { CancelRequest, ChildSpend, FanOutChild, Phase, RunInput, RunResult, RunState } from '../shared/types.js';
import { addSpend } from '../loop/budget.js';
import { initialState, log } from './machine.js';
import type { kilnRun } from './run.js';

const PARENT_PHASES: Record<Phase, readonly Phase[]> = {
  preparing: ['planning', 'blocked', 'cancelled'],
  planning: ['succeeded', 'blocked', 'cancelled'],
  editing: [],
  awaiting_approval: [],
  awaiting_budget: [],
  verifying: [],
  retrying: [],
  needs_human: [],
  succeeded: [],
  blocked: [],
  cancelled: [],
};

/** The child runs' ids: the parent's with `-a1` … `-aN`, so `kiln status` finds them from the parent's. */
export function childRunId(parent: string, i: number): string {
  return `${parent}-a${i + 1}`;
}

/** What child i is asked to do: the same goal, its own model when several were named, no fan-out of its own. */
export function childInput(input: RunInput, i: number): RunInput {
  const { attempts: _n, attemptModels, ...rest } = input;
  const models = attemptModels?.length ? attemptModels : [input.model];
  return { ...rest, runId: childRunId(input.runId, i), model: models[i % models.length]! };
}

export async function fanOut(input: RunInput, n: number): Promise<RunResult> {
  const state: RunState = { ...initialState(input), children: [] };
  const now = () => new Date().toISOString();
  const phase = (p: Phase, why?: string) => {
    if (!PARENT_PHASES[state.phase].includes(p)) throw new Error(`illegal phase transition of a parallel run: ${state.phase} → ${p}`);
    state.phase = p;
    log(state, now(), 'phase', why ? `${p}: ${why}` : p);
  };
  setHandler(statusQuery, () => state);
  // what children that ended cancelled spent: their result is a cancellation, so they say it
  const spent = new Map<string, ChildSpend>();
  setHandler(childSpendSignal, (s) => {
    if (s && typeof s.runId === 'string' && state.children!.some((c) => c.runId === s.runId)) spent.set(s.runId, s);
  });
  let who: CancelRequest | undefined;
  setHandler(cancelRequestSignal, (r) => {
    if (r && typeof r.by === 'string') who = { by: r.by.slice(0, 200), reason: r.reason?.slice(0, 500) };
  });

  const tenant = workflowInfo().typedSearchAttributes.get(KilnTenant);
  const scopes: CancellationScope[] = [];
  const results: Array<Promise<Settled>> = [];
  try {
    for (let i = 0; i < n; i++) {
      const child = childInput(input, i);
      const scope = new CancellationScope();
      scopes.push(scope);
      const handle = await scope.run(() =>
        startChild<typeof kilnRun>('kilnRun', {
          workflowId: child.runId,
          args: [child],
          // a child stops (and cleans up) when its parent closes, whatever closed it
          parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
          // the tenant `kiln serve` started the run for: the children's calls count against its budget ledger
          ...(tenant ? { typedSearchAttributes: [{ key: KilnTenant, value: tenant }] } : {}),
          cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        }),
      );
      state.children!.push({ runId: child.runId, model: child.model, phase: 'preparing' });
      results.push(settle(handle, i));
    }
    phase('planning', `${n} attempts at once: ${state.children!.map((c) => c.runId).join(', ')}`);
    const winner = await firstSuccess(state, results, spent);
    for (const [i, s] of scopes.entries()) if (i !== winner?.i) s.cancel();
    // the losers' worktrees and sandboxes are gone before the run says it ended
    for (const s of await CancellationScope.nonCancellable(() => Promise.all(results)))
      if (state.children![s.i]!.phase === 'preparing') record(state, s, spent);
    // a cancel of the parent ended every child (they settle as cancelled, not as a failure here)
    if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('cancelled by request');
    if (!winner) {
      phase('blocked', 'no attempt succeeded');
      state.reason = state.children!.map((c) => `${c.runId}: ${c.phase}${c.reason ? ` (${c.reason})` : ''}`).join('; ');
      throw ApplicationFailure.create({ type: 'KilnRunNotAchieved', message: `blocked: ${state.reason}`, nonRetryable: true, details: [result(state)] });
    }
    state.winner = winner.r.runId;
    state.artifactsDir = winner.r.artifactsDir;
    phase('succeeded', `${winner.r.runId} succeeded; the others were cancelled`);
    return { ...result(state), patchPath: winner.r.patchPath, attempts: winner.r.attempts, turns: winner.r.turns };
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // cancelling the parent reaches every child (their scopes are inside this one); each writes its artifacts
    for (const s of await CancellationScope.nonCancellable(() => Promise.all(results)))
      if (state.children![s.i]!.phase === 'preparing') record(state, s, spent);
    state.reason = who ? `cancelled by ${who.by}${who.reason ? `: ${who.reason}` : ''}` : 'cancelled by request';
    phase('cancelled', 'every attempt was cancelled');
    throw err;
  }
}

type Settled = { i: number; r?: RunResult; failure?: string; cancelled?: boolean };

async function settle(handle: ChildWorkflowHandle<typeof kilnRun>, i: number): Promise<Settled> {
  try {
    return { i, r: await handle.result() };
  } catch (err) {
    if (isCancellation(err)) return { i, cancelled: true };
    // a blocked run fails with its result in the details (run.ts, notAchieved)
    const details = (err as { cause?: { details?: unknown[] } }).cause?.details;
    const r = details?.[0] as RunResult | undefined;
    if (r && typeof r === 'object' && 'state' in r) return { i, r };
    return { i, failure: String((err as Error)?.message ?? err).slice(0, 300) };
  }
}

/** Waits until a child succeeds (it is returned) or every child has ended without success. */
async function firstSuccess(
  state: RunState,
  pending: Array<Promise<Settled>>,
  spent: ReadonlyMap<string, ChildSpend>,
): Promise<(Settled & { r: RunResult }) | undefined> {
  const open = new Map(pending.map((p, i) => [i, p]));
  while (open.size) {
    const s = await Promise.race(open.values());
    open.delete(s.i);
    record(state, s, spent);
    if (s.r?.state === 'succeeded') return s as Settled & { r: RunResult };
  }
  return undefined;
}

/** A child's end as the parent shows it, its spend added to the parent's. */
function record(state: RunState, s: Settled, spent: ReadonlyMap<string, ChildSpend>): void {
  const child: FanOutChild = state.children![s.i]!;
  child.phase = s.r?.state ?? (s.cancelled ? 'cancelled' : 'blocked');
  child.reason = s.r?.reason ?? s.failure;
  const spend = s.r ?? spent.get(child.runId);
  if (spend) {
    addSpend(state.budget, spend.tokens, spend.costUsd);
    state.budget.turns += spend.turns;
  }
  log(state, new Date().toISOString(), 'note', `${child.runId} ended ${child.phase}${child.reason ? `: ${child.reason}` : ''}`);
}

function result(state: RunState): RunResult {
  const b = state.budget;
  return {
    runId: state.runId,
    state: state.phase,
    reason: state.reason,
    attempts: state.children?.length ?? 0,
    turns: b.turns,
    artifactsDir: state.artifactsDir,
    patchPath: '',
    tokens: { input: b.input, output: b.output, cacheRead: b.cacheRead, cacheWrite: b.cacheWrite },
    costUsd: b.costUsd,
    scripted: state.scripted,
  };
}
