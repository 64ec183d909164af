import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';

/** Heartbeat period: well under the smallest heartbeat timeout a run may set (tests use 3 s). */
export const HEARTBEAT_EVERY_MS = 1000;

/**
 * What the activity is doing, for whoever looks (the live view, the Web UI's pending activity):
 * the innermost heartbeating() that said something. A nested call that says nothing (runTool
 * inside a turn) must not blank what the turn said.
 */
const saying = new WeakMap<Context, () => unknown>();

/**
 * Keeps an activity visibly alive while a long call runs, so a dead worker is noticed within
 * the heartbeat timeout instead of the start-to-close timeout. Outside an activity it just runs.
 * The first beat comes after HEARTBEAT_EVERY_MS, not at once: a call that ends sooner needs none
 * (nobody looks at what it was doing before then), and an activity that heartbeated within the
 * throttle interval completes only after its pending beat is flushed, ~1.5 ms a turn's activity.
 */
export async function heartbeating<T>(fn: () => Promise<T>, details?: () => unknown): Promise<T> {
  const c = activityContext();
  if (!c) return fn();
  const outer = saying.get(c);
  const say = details ?? outer;
  if (details) saying.set(c, details);
  const timer = setInterval(() => c.heartbeat(say?.()), HEARTBEAT_EVERY_MS);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
    if (details) {
      if (outer) saying.set(c, outer);
      else saying.delete(c);
    }
  }
}

/**
 * A cancelled activity stops at this point instead of recording what its killed command printed
 * as a result (a baseline written after its run had ended was once read as the truth, and raced
 * whoever removed the run's files). Outside an activity it does nothing.
 */
export function stopIfCancelled(what: string): void {
  if (activityContext()?.cancellationSignal.aborted) throw new CancelledFailure(`${what} cancelled`);
}

/** The running activity's context; undefined outside an activity (a unit test calling the function itself). */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** The running activity's cancellation, or none outside an activity (a unit test). */
export function activityCancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}
