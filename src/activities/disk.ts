/**
 * A full disk, told apart from other failures: it is the worker's problem, not the model's or the
 * run's, and it can pass (a person frees space). Git says it in words, Node in an errno.
 */
import { ApplicationFailure } from '@temporalio/common';
import { DISK_FULL_FAILURE } from '../shared/constants.js';

const FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);
const FULL_TEXT = /no space left on device|out of diskspace|disk quota exceeded/i;

export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && FULL_CODES.has(code)) return true;
  return FULL_TEXT.test(String((err as Error | undefined)?.message ?? ''));
}

/**
 * How long an activity waits before trying again on a full disk: Temporal's retry, with the reason
 * said. The activity's maximumAttempts bounds the wait (workflows/options.ts): a host activity's
 * five tries wait four times, about 60 s; a model turn's eight, about 105 s.
 */
export const DISK_FULL_RETRY_MS = 15_000;

/**
 * The retryable failure an activity ends with while the disk is full: a model turn (no model call
 * was lost, see agent.ts) or any other activity (failure.ts classifies them all on the way out).
 */
export function diskFullFailure(where: string, err: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type: DISK_FULL_FAILURE,
    message: `the worker's disk is full (${where}): ${String((err as Error)?.message ?? err).slice(0, 300)}; Kiln tries again every ${DISK_FULL_RETRY_MS / 1000} s — free space on the worker to let the run go on`,
    nextRetryDelay: DISK_FULL_RETRY_MS,
  });
}
