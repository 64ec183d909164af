import { agentActivities } from './agent.js';
import { approvalActivities } from './approvals.js';
import { auditActivities } from './audit.js';
import type { ActivityDeps } from './deps.js';
import { classified } from './failure.js';
import { toolActivities } from './tools.js';
import { verifyActivities } from './verify.js';
import { workspaceActivities } from './workspace.js';

/** All of Kiln's activities over injected dependencies (tests pass fakes), their errors classified. */
export function createActivities(deps: ActivityDeps) {
  const tools = toolActivities(deps);
  return classified({
    ...workspaceActivities(deps),
    // a turn runs its calls through the same runTool the workflow schedules (run-ahead.ts)
    ...agentActivities(deps, tools),
    ...tools,
    ...verifyActivities(deps),
    ...auditActivities(deps),
    ...approvalActivities(deps),
  });
}

export { defaultDeps, type ActivityDeps } from './deps.js';
