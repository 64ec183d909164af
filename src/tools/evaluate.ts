/*
 * The policy's decision on a tool call, by the tool's name: the tool's own judge (in its file)
 * judges the call, the policy makes the decision of the judgement. The tools own their judges, so
 * this lives on their side: the policy imports nothing of the tools.
 */
import { runCases, type PolicyCasesReport } from '../policy/cases.js';
import { decide } from '../policy/evaluate.js';
import type { Judgement, ToolInput } from '../policy/judging.js';
import type { PolicyContext, PolicyDecision } from '../policy/types.js';
import { MCP_PREFIX, judgeMcpCall } from '../policy/mcp.js';
import { deny } from '../policy/verdict.js';
import { TOOL_CATALOG, TOOL_NAMES, isToolName } from './catalog.js';
import { TOOLS } from './registry.js';

/** Each tool is judged by its own spec; a name without one is no tool at all. */
async function judgeTool(tool: string, input: unknown, ctx: PolicyContext): Promise<Judgement> {
  if (tool.startsWith(MCP_PREFIX)) return { verdict: judgeMcpCall(tool, input, ctx) };
  if (!isToolName(tool)) return { verdict: deny('tool.unknown', `There is no tool named ${tool}; use one of ${TOOL_NAMES.join(', ')}.`) };
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    return { verdict: deny('input.invalid', `${tool} needs its input as a JSON object.`) };
  }
  return TOOLS[tool].judge(input as ToolInput, ctx);
}

/** Decides allow, deny or ask for one tool call. Never throws for bad input: it denies. */
export async function evaluate(tool: string, input: unknown, ctx: PolicyContext): Promise<PolicyDecision> {
  const judgement = await judgeTool(tool, input, ctx);
  return decide(tool, input, judgement, ctx, isToolName(tool) && TOOL_CATALOG[tool].safeToRepeat === 'judged');
}

/**
 * Runs a JSON-lines corpus of policy cases, each in a fresh temporary worktree, each call decided
 * as a run decides it. `policyFile` replaces the default policy for cases without an inline one.
 */
export function runPolicyCases(file: string, opts: { policyFile?: string } = {}): Promise<PolicyCasesReport> {
  return runCases(evaluate, file, opts);
}
