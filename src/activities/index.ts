import { agentTurn, type AgentDeps } from './agent.js';
import { identifyDecision, identifyStarter } from './approvals.js';
import { recordAudit } from './audit.js';
import type { ActivityDeps, ToolDeps } from './deps.js';
import { classified } from './failure.js';
import { finalizeRun } from './finalize.js';
import { recordToolResult, runTool, runTools } from './tools.js';
import { currentTree, judgePatch } from './ship-checks.js';
import { verify } from './verify.js';
import { reviewPatch } from './review.js';
import type { RunInput } from '../shared/types.js';
import { prepareWorkspace, takeBaseline, type PrepareOptions, type RebuildRequest } from './workspace.js';

/** All of Kiln's activities over injected dependencies (tests pass fakes), their errors classified. */
export function createActivities(deps: ActivityDeps) {
  const toolDeps: ToolDeps = { ...deps, decided: new Map() };
  const tools = {
    runTool: bound(toolDeps, runTool),
    runTools: bound(toolDeps, runTools),
    recordToolResult: bound(toolDeps, recordToolResult),
  };
  // a turn runs its calls through the same runTool the workflow schedules (run-ahead.ts)
  const agentDeps: AgentDeps = { ...deps, unsaved: new Map(), runTool: tools.runTool };
  return classified({
    prepareWorkspace: (request: RunInput, rebuild?: RebuildRequest, o?: PrepareOptions) => prepareWorkspace(deps, request, rebuild, o),
    takeBaseline: bound(deps, takeBaseline),
    finalizeRun: bound(deps, finalizeRun),
    agentTurn: bound(agentDeps, agentTurn),
    ...tools,
    verify: bound(deps, verify),
    reviewPatch: bound(deps, reviewPatch),
    currentTree: bound(deps, currentTree),
    judgePatch,
    recordAudit: bound(deps, recordAudit),
    identifyDecision: bound(deps, identifyDecision),
    identifyStarter: bound(deps, identifyStarter),
  });
}

/** An activity with its dependencies bound: the name and the input the workflow knows stay as they are. */
function bound<D, I, R>(deps: D, activity: (deps: D, inp: I) => Promise<R>): (inp: I) => Promise<R> {
  return (inp) => activity(deps, inp);
}

export { defaultDeps, type ActivityDeps } from './deps.js';
