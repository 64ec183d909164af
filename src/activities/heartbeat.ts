import { Context } from '@temporalio/activity';

/** Heartbeat period: well under the smallest heartbeat timeout a run may set (tests use 3 s). */
export const HEARTBEAT_EVERY_MS = 1000;

/**
 * Keeps an activity visibly alive while a long call runs, so a dead worker is noticed within
 * the heartbeat timeout instead of the start-to-close timeout. Outside an activity it just runs.
 */
export async function heartbeating<T>(fn: () => Promise<T>, details?: () => unknown): Promise<T> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return fn();
  }
  const c = ctx;
  c.heartbeat(details?.());
  const timer = setInterval(() => c.heartbeat(details?.()), HEARTBEAT_EVERY_MS);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}
