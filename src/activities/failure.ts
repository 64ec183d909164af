/**
 * The one place a Kiln error becomes what Temporal retries on: an ApplicationFailure typed with
 * the error's name, non-retryable when the error says no retry can help, with the other side's
 * retry-after as the next delay. The workflow keeps no list of error names.
 */
import { ApplicationFailure } from '@temporalio/common';
import { redact } from '../redact/index.js';
import { KilnError } from '../shared/errors.js';
import type { AgentTurnResult, TurnsTaken } from '../shared/contracts.js';
import { diskFullFailure, isDiskFull } from './disk.js';

/** `where`: the activity, named in a full disk's failure. */
export function toApplicationFailure(err: unknown, where = 'an activity'): unknown {
  // a full disk is the worker's, whatever met it: every activity waits for space the same way
  if (!(err instanceof ApplicationFailure) && isDiskFull(err)) return diskFullFailure(where, err);
  if (!(err instanceof KilnError)) return err;
  const failure = ApplicationFailure.create({
    type: err.failureType,
    message: redact(err.message),
    nonRetryable: !err.retryable,
    ...(err.retryable && err.retryAfterMs !== undefined ? { nextRetryDelay: err.retryAfterMs } : {}),
  });
  if (err.stack) failure.stack = redact(err.stack);
  return failure;
}

/**
 * The failure of a turn that an activity took after others, with those turns in its details: it
 * keeps the failed turn's type, retry-after and retryability, so Temporal paces and bounds it as
 * it would the turn as an activity of its own, and the workflow still reads the turns before it.
 */
export function withTurnsTaken(err: unknown, taken: AgentTurnResult): ApplicationFailure {
  const f = toApplicationFailure(err);
  const failed =
    f instanceof ApplicationFailure
      ? f
      : ApplicationFailure.create({ type: (f as Error)?.name ?? 'Error', message: String((f as Error)?.message ?? f), nonRetryable: false });
  const details: TurnsTaken = { turnsTaken: taken };
  const out = ApplicationFailure.create({
    type: failed.type ?? undefined,
    message: failed.message,
    nonRetryable: failed.nonRetryable ?? false,
    ...(failed.nextRetryDelay !== undefined ? { nextRetryDelay: failed.nextRetryDelay } : {}),
    details: [details],
  });
  out.stack = (f as Error)?.stack ?? out.stack;
  return out;
}

type Activity = (...args: never[]) => Promise<unknown>;

/** Each activity with its Kiln errors classified on the way out. */
export function classified<T extends Record<string, Activity>>(activities: T): T {
  const out: Record<string, Activity> = {};
  for (const [name, fn] of Object.entries(activities)) {
    out[name] = async (...args) => {
      try {
        return await fn(...args);
      } catch (err) {
        throw toApplicationFailure(err, name);
      }
    };
  }
  return out as T;
}
