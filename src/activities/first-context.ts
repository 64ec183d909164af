/**
 * The first message's context (the repository packed for the goal, context/build.ts), started
 * when prepare has set the worktree up: it is a function of the worktree and the goal, and
 * nothing changes the worktree between prepare and the first turn's calls. It takes several git
 * and search processes (~20 ms on a small repo here), which the first model request would
 * otherwise wait for. A turn in another process, or after a restart, builds it itself.
 */
import { buildContext, type BuiltContext } from '../context/index.js';
import type { RunRecord } from '../store/run-files.js';

/** Context packed into the first message: enough to start, small enough to stay cheap. */
export const CONTEXT_TOKEN_BUDGET = 6000;

/** run → its first context while it waits for the first turn (this process's) */
const ahead = new Map<string, Promise<BuiltContext>>();
/** a run whose first turn never comes (cancelled meanwhile) must not hold its context for ever */
const MAX_AHEAD = 64;

const keyOf = (rec: RunRecord) => `${rec.input.repo}\0${rec.input.runId}\0${rec.worktree}`;

function build(rec: RunRecord): Promise<BuiltContext> {
  return buildContext({ workspace: rec.worktree, goal: rec.input.goal, maxTokens: CONTEXT_TOKEN_BUDGET, includeRules: false });
}

/** Starts the first context now, for the first turn to take (callers need not wait for it). */
export function firstContextAhead(rec: RunRecord): Promise<unknown> {
  const key = keyOf(rec);
  const going = ahead.get(key);
  if (going) return going;
  const p = build(rec);
  // a failure is the first turn's to meet: it builds its own
  p.catch(() => undefined);
  ahead.set(key, p);
  if (ahead.size > MAX_AHEAD) ahead.delete(ahead.keys().next().value!);
  return p;
}

/** The first context: the one started at prepare if this process has it, else built now. */
export async function firstContext(rec: RunRecord): Promise<BuiltContext> {
  const key = keyOf(rec);
  const p = ahead.get(key);
  ahead.delete(key);
  return (await p?.catch(() => undefined)) ?? build(rec);
}
