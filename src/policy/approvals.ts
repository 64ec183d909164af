/**
 * Who must answer an approval: the policy's `approvals` section. A kind of call listed in
 * `twoPerson` asks even where the rest of the policy would allow it, and is approved only by two
 * different people `kiln serve` authenticated; `authenticated` makes every approval need one.
 * Both only tighten: the precedence merge unions them, so a repo may add a rule, never drop one.
 */
import { TOOL_NAMES } from '../tools/catalog.js';
import { matchesRule } from './commands.js';
import type { PolicyConfig } from './config.js';
import type { PolicyDecision } from './types.js';

const KINDS = ['command', 'rule', 'tool'] as const;

/** Why a twoPerson entry is not one Kiln understands, or undefined. */
export function twoPersonRuleProblem(rule: string): string | undefined {
  const m = /^(\w+):(.*)$/s.exec(rule);
  const kind = m?.[1];
  const arg = m?.[2]?.trim();
  if (!m || !KINDS.includes(kind as (typeof KINDS)[number]))
    return 'expected "command:<rule as in commands.ask>", "rule:<policy rule id>" or "tool:<tool name>"';
  if (!arg) return `"${kind}:" needs what follows the colon`;
  if (kind === 'tool' && !(TOOL_NAMES as readonly string[]).includes(arg)) return `no tool is named ${arg} (tools: ${TOOL_NAMES.join(', ')})`;
  return undefined;
}

export interface ApprovalNeeds {
  /** different people who must approve: 1, or 2 for a twoPerson kind of call */
  approvers: 1 | 2;
  /** only decisions signed by `kiln serve` count */
  authenticated: boolean;
  /** the twoPerson entry that matched */
  twoPersonRule?: string;
}

/** The twoPerson entry this call matches, judged on the parsed segments a command was judged on. */
export function matchTwoPerson(config: PolicyConfig, tool: string, decision: PolicyDecision): string | undefined {
  return config.approvals.twoPerson.find((entry) => {
    const i = entry.indexOf(':');
    const kind = entry.slice(0, i);
    const arg = entry.slice(i + 1).trim();
    if (kind === 'tool') return tool === arg;
    if (kind === 'rule') return decision.rule === arg || decision.rule.startsWith(`${arg}.`);
    return tool === 'run_command' && (decision.segments ?? []).some((s) => matchesRule(arg, s.argv));
  });
}

/**
 * The policy's decision with the approvals section applied: a twoPerson call that would be
 * allowed asks, and no run-wide grant covers it (each such call is approved by two people).
 * A deny stays a deny.
 */
export function applyApprovalRules(config: PolicyConfig, tool: string, decision: PolicyDecision): { decision: PolicyDecision; needs: ApprovalNeeds } {
  const rule = decision.decision === 'deny' ? undefined : matchTwoPerson(config, tool, decision);
  if (!rule) return { decision, needs: { approvers: 1, authenticated: config.approvals.authenticated } };
  const rest = { ...decision };
  delete rest.grantKey;
  return {
    decision: {
      ...rest,
      decision: 'ask',
      rule: decision.decision === 'ask' ? decision.rule : 'approvals.two-person',
      reason: `${decision.decision === 'ask' ? `${decision.reason} ` : ''}Two different people approve this kind of call (policy approvals.twoPerson ${JSON.stringify(rule)}).`,
    },
    needs: { approvers: 2, authenticated: true, twoPersonRule: rule },
  };
}
