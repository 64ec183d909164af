/**
 * The least a durable turn can cost: a workflow that only hands a no-op activity to another task
 * queue and waits for it, as Kiln's run hands each turn to its worktree's host queue (floors.ts).
 */
import { proxyActivities } from '@temporalio/workflow';

export async function floorPingPong(rounds: number, activityQueue: string): Promise<number> {
  const { noop } = proxyActivities<{ noop(i: number): Promise<number> }>({ startToCloseTimeout: '1 minute', taskQueue: activityQueue });
  let sum = 0;
  for (let i = 0; i < rounds; i++) sum += await noop(i);
  return sum;
}
