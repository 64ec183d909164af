import { canonicalJson, sha256 } from './canonical.js';
import type { Judgement } from './judging.js';
import type { PolicyContext, PolicyDecision } from './types.js';
import { applyMode } from './verdict.js';

export { canonicalJson, sha256 };

/**
 * One tool call's decision from its tool's judgement (the tools own their judges: `evaluate` in
 * src/tools finds the judge and calls this): the approval mode applied, and what an approval of the
 * call binds to. `repeatJudged`: the tool is safe to repeat only when its judge says so (a command),
 * so a judgement silent on it says no.
 */
export function decide(tool: string, input: unknown, judgement: Judgement, ctx: PolicyContext, repeatJudged: boolean): PolicyDecision {
  const { verdict, extra } = judgement;
  const v = applyMode(verdict, ctx);
  const decision: PolicyDecision = { decision: v.decision, rule: v.rule, reason: v.reason };
  if (v.decision === 'ask') decision.grantKey = v.grantKey ?? `${tool}:${canonicalJson(input)}`;
  decision.hash = extra?.hash ?? sha256(canonicalJson({ tool, input }));
  if (extra?.segments) decision.segments = extra.segments;
  if (repeatJudged) decision.safeToRepeat = extra?.safeToRepeat ?? false;
  return decision;
}
