import { agentActivities } from './agent.js';
import { approvalActivities } from './approvals.js';
import { auditActivities } from './audit.js';
import type { ActivityDeps, ToolDeps } from './deps.js';
import { classified } from './failure.js';
import { recordToolResult, runTool, runTools } from './tools.js';
import { verifyActivities } from './verify.js';
import { workspaceActivities } from './workspace.js';

/** All of Kiln's activities over injected dependencies (tests pass fakes), their errors classified. */
export function createActivities(deps: ActivityDeps) {
  const toolDeps: ToolDeps = { ...deps, decided: new Map() };
  const tools = {
    runTool: (inp: Parameters<typeof runTool>[1]) => runTool(toolDeps, inp),
    runTools: (inp: Parameters<typeof runTools>[1]) => runTools(toolDeps, inp),
    recordToolResult: (inp: Parameters<typeof recordToolResult>[1]) => recordToolResult(toolDeps, inp),
  };
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
