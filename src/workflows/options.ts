/**
 * Activity options and the failure tests the workflow needs. Temporal owns every retry; the
 * timeouts are set here once so the run and the attempt cannot disagree.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  proxyActivities,
  type ActivityInterfaceFor,
} from '@temporalio/workflow';
import type { createActivities } from '../activities/index.js';
import { DEFAULT_HOST_LOSS_MS, type RunInput } from '../shared/types.js';
import type { AgentTurnResult, TurnsTaken } from '../shared/contracts.js';

export type Activities = ReturnType<typeof createActivities>;
export type Acts = ActivityInterfaceFor<Activities>;

/** prepareWorkspace runs on the shared queue; the worker that ran it names its host queue. */
export const shared = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '60 seconds',
  // activities mark the failures no retry can fix as non-retryable themselves (activities/failure.ts)
  retry: { maximumAttempts: 3 },
});

/** Activities that touch the worktree go to the queue of the host that holds it. */
export const hostActivities = (input: RunInput, hostQueue: string): Acts => proxyActivities<Activities>({ ...hostOptions(input), taskQueue: hostQueue });

/** Activity options from the run's settings; Temporal owns every retry. */
function options(input: RunInput, startToCloseTimeout: string | number, maximumAttempts: number) {
  return {
    startToCloseTimeout,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: { maximumAttempts },
  };
}

/** On the worktree's host queue, waiting longer than this for a worker means the host is gone. */
const onHost = <T extends object>(input: RunInput, o: T) => ({ ...o, scheduleToStartTimeout: input.hostLossTimeoutMs ?? DEFAULT_HOST_LOSS_MS });

export const sharedOptions = (input: RunInput) => options(input, '30 minutes', 3);
export const hostOptions = (input: RunInput) => onHost(input, options(input, '30 minutes', 5));
/**
 * A cancelled run waits for its running tool to stop (the command's process group killed) before
 * cleanup removes the worktree: otherwise a cancelled command outlives its run.
 */
export const toolOptions = (input: RunInput) => ({
  ...onHost(input, options(input, input.commandTimeoutMs + 60_000, 5)),
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** Model turns: the SDK's retries are off; retry-after comes back as the failure's nextRetryDelay. */
export function modelOptions(input: RunInput) {
  const o = onHost(input, options(input, '10 minutes', 8));
  return {
    ...o,
    retry: { ...o.retry, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
    // every attempt of one turn together: eight hung attempts once took 40 minutes
    scheduleToCloseTimeout: MODEL_TURN_DEADLINE,
  };
}

/**
 * A turn that runs its calls too (activities/run-ahead.ts): the model call's limits plus one
 * command's, and a cancelled run waits for that command to stop, as a lone runTool does.
 */
export function turnAheadOptions(input: RunInput) {
  const o = modelOptions(input);
  const command = input.commandTimeoutMs + 60_000;
  return {
    ...o,
    startToCloseTimeout: 10 * 60_000 + command,
    scheduleToCloseTimeout: 20 * 60_000 + command,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
}

/** All attempts of one model turn; each attempt is cut sooner by the worker's first-byte and idle limits. */
export const MODEL_TURN_DEADLINE = '20 minutes';

/** No worker took a host activity in time: the worktree's machine is gone. */
export function isHostLost(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';
}

/** The turns a failed turn activity took before the turn that failed (activities/run-ahead.ts); undefined if none. */
export function turnsTakenBefore(err: unknown): AgentTurnResult | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const details = err.cause.details?.[0] as Partial<TurnsTaken> | undefined;
  return details && typeof details === 'object' ? details.turnsTaken : undefined;
}

/** The one line a blocked run shows when an activity could not succeed. */
export function failureReason(err: ActivityFailure): string {
  const cause = err.cause;
  const what = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
  return `${err.activityType ?? 'activity'} failed: ${what}${cause?.message ?? err.message}`.slice(0, 1000);
}
