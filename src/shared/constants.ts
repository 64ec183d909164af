export const DEFAULT_TASK_QUEUE = 'kiln';
export const WORKFLOW_TYPE = 'kilnRun';

/** Activities that touch a worktree run on the queue of the host that holds it. */
export function hostTaskQueue(host: string): string {
  return `kiln-host-${host}`;
}
