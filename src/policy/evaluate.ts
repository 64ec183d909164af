import { TOOL_CATALOG, TOOL_NAMES, isToolName } from '../tools/catalog.js';
import { TOOLS } from '../tools/registry.js';
import { canonicalJson, sha256 } from './canonical.js';
import type { Judgement, ToolInput } from './judging.js';
import type { PolicyContext, PolicyDecision } from './types.js';
import { applyMode, deny } from './verdict.js';

export { canonicalJson, sha256 };

/** Each tool is judged by its own spec; a name without one is no tool at all. */
async function judgeTool(tool: string, input: unknown, ctx: PolicyContext): Promise<Judgement> {
  if (!isToolName(tool)) return { verdict: deny('tool.unknown', `There is no tool named ${tool}; use one of ${TOOL_NAMES.join(', ')}.`) };
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    return { verdict: deny('input.invalid', `${tool} needs its input as a JSON object.`) };
  }
  return TOOLS[tool].judge(input as ToolInput, ctx);
}

/** Decides allow, deny or ask for one tool call. Never throws for bad input: it denies. */
export async function evaluate(tool: string, input: unknown, ctx: PolicyContext): Promise<PolicyDecision> {
  const { verdict, extra } = await judgeTool(tool, input, ctx);
  const v = applyMode(verdict, ctx);
  const decision: PolicyDecision = { decision: v.decision, rule: v.rule, reason: v.reason };
  if (v.decision === 'ask') decision.grantKey = v.grantKey ?? `${tool}:${canonicalJson(input)}`;
  decision.hash = extra?.hash ?? sha256(canonicalJson({ tool, input }));
  if (extra?.segments) decision.segments = extra.segments;
  if (isToolName(tool) && TOOL_CATALOG[tool].safeToRepeat === 'judged') decision.safeToRepeat = extra?.safeToRepeat ?? false;
  return decision;
}
