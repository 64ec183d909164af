/**
 * An activity attempt after the first — the worker crashed, a heartbeat timed out, the host was
 * busy — leaves a line in the run's events.jsonl, so the record says where a run was retried. Every Kiln activity takes the run's repo and id first.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import { artifactsDir } from '../shared/paths.js';
import { appendEvent } from '../store/run-files.js';

export function retryTrace(ctx: Context): ActivityInterceptors {
  return {
    inbound: {
      async execute(input, next) {
        const { attempt, activityType } = ctx.info;
        const ref = input.args[0] as { repo?: unknown; runId?: unknown } | undefined;
        if (attempt > 1 && typeof ref?.repo === 'string' && typeof ref.runId === 'string' && existsSync(artifactsDir(ref.repo, ref.runId))) {
          // the trace must never be the reason an activity fails
          await appendEvent(ref.repo, ref.runId, { type: 'activity_retry', activity: activityType, attempt }).catch(() => undefined);
        }
        return next(input);
      },
    },
  };
}
