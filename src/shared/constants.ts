export const DEFAULT_TASK_QUEUE = 'kiln';
export const WORKFLOW_TYPE = 'kilnRun';

/** Activities that touch a worktree run on the queue of the host that holds it. */
export function hostTaskQueue(host: string): string {
  return `kiln-host-${host}`;
}

/**
 * The failure type a run that did not reach its goal (blocked) ends with: the workflow fails,
 * non-retryable, with the RunResult as the failure's details. The Web UI lists it as Failed,
 * not as a green Completed; clients read the RunResult back from the details (outcome()).
 */
export const RUN_NOT_ACHIEVED = 'KilnRunNotAchieved';

/**
 * The failure type of an activity that met a full disk: Temporal tries it again after a fixed
 * delay (activities/disk.ts), and `kiln status` finds a run waiting on the disk by it.
 */
export const DISK_FULL_FAILURE = 'DiskFullError';
