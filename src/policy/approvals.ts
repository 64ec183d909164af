/**
 * Who must answer an approval: the policy's `approvals` section. A kind of call listed in
 * `twoPerson` asks even where the rest of the policy would allow it, and is approved only by two
 * different people `kiln serve` authenticated; `authenticated` makes every approval need one.
 * Two approvals are not tool calls: `setup` names setup commands (they run with network) that
 * wait for a person before they run, and `patch` a size over which the run's patch waits for
 * its approvers before the run may succeed. All only tighten: the precedence merge unions or
 * takes the stricter, so a repo may add a rule, never drop one.
 */
import { matchesRule } from './commands.js';
import type { PolicyConfig } from './config.js';
import type { PolicyDecision } from './types.js';

export interface ApprovalNeeds {
  /** different people who must approve: 1, or 2 for a twoPerson kind of call */
  approvers: number;
  /** only decisions signed by `kiln serve` count */
  authenticated: boolean;
  /** the twoPerson entry that matched */
  twoPersonRule?: string;
  /** the person who started the run may be one of the approvers (policy approvals.starterCounts); absent: they are not */
  starterCounts?: boolean;
}

/** The operator's or user's word that a run's starter may approve it too; a repo alone cannot say it. */
const starterCounts = (config: PolicyConfig) => (config.approvals.starterCounts ? { starterCounts: true } : {});

/** The twoPerson entry this call matches, judged on the parsed segments a command was judged on. */
export function matchTwoPerson(config: PolicyConfig, tool: string, decision: PolicyDecision): string | undefined {
  return config.approvals.twoPerson.find((entry) => {
    const i = entry.indexOf(':');
    const kind = entry.slice(0, i);
    const arg = entry.slice(i + 1).trim();
    if (kind === 'tool') return tool === arg;
    if (kind === 'rule') return decision.rule === arg || decision.rule.startsWith(`${arg}.`);
    if (kind === 'setup') return false;
    // only a command's decision has segments: a rule on what runs matches no other tool
    return (decision.segments ?? []).some((s) => matchesRule(arg, s.argv));
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
    needs: { approvers: 2, authenticated: true, twoPersonRule: rule, ...starterCounts(config) },
  };
}

/** What a person is asked about something that is not a tool call: the setup, or the patch. */
export interface ApprovalAsk {
  needs: ApprovalNeeds;
  /** the policy entry that asks, for the audit and the inbox */
  rule: string;
  reason: string;
}

/** A setup command against an approvals rule: the command's words, as `commands.ask` matches a segment. */
function setupMatches(rule: string, command: string): boolean {
  return matchesRule(rule, command.trim().split(/\s+/));
}

/**
 * Whether the run's setup commands wait for a person before they run (with network): any of them
 * matching `approvals.setup` asks one approver, any matching a `setup:` twoPerson entry two
 * different authenticated ones. The setup is approved as a whole, so what is approved is
 * exactly the list that runs.
 */
export function judgeSetup(config: PolicyConfig, setup: readonly string[]): ApprovalAsk | undefined {
  if (!setup.length) return undefined;
  const two = config.approvals.twoPerson.find((e) => e.startsWith('setup:') && setup.some((c) => setupMatches(e.slice('setup:'.length).trim(), c)));
  const one = config.approvals.setup.find((r) => setup.some((c) => setupMatches(r, c)));
  if (!two && !one) return undefined;
  const named = setup.filter((c) => setupMatches(two ? two.slice('setup:'.length).trim() : one!, c));
  const what = `setup runs with network access: ${named.map((c) => JSON.stringify(c)).join(', ')}`;
  if (two)
    return {
      needs: { approvers: 2, authenticated: true, twoPersonRule: two, ...starterCounts(config) },
      rule: 'approvals.setup.two-person',
      reason: `${what}. Two different people approve it before it runs (policy approvals.twoPerson ${JSON.stringify(two)}).`,
    };
  return {
    needs: { approvers: 1, authenticated: config.approvals.authenticated },
    rule: 'approvals.setup',
    reason: `${what}. A person approves it before it runs (policy approvals.setup ${JSON.stringify(one)}).`,
  };
}

/** Whether a patch of this many changed lines (added + removed) waits for approvers before the run may succeed. */
export function judgePatchSize(config: PolicyConfig, changedLines: number): ApprovalAsk | undefined {
  const rule = config.approvals.patch;
  if (!rule || changedLines <= rule.overLines) return undefined;
  const approvers = rule.approvers;
  return {
    needs: { approvers, authenticated: approvers > 1 || config.approvals.authenticated, ...starterCounts(config) },
    rule: 'approvals.patch',
    reason: `The patch changes ${changedLines} lines, over the policy's ${rule.overLines} (approvals.patch): ${approvers > 1 ? `${approvers} different people approve` : 'a person approves'} it before the run may succeed.`,
  };
}

/** The stricter of two patch rules: the lower limit, the more approvers. */
export function stricterPatchRule(a: PatchRule | undefined, b: PatchRule | undefined): PatchRule | undefined {
  if (!a || !b) return a ?? b;
  return { overLines: Math.min(a.overLines, b.overLines), approvers: Math.max(a.approvers, b.approvers) };
}

export interface PatchRule {
  overLines: number;
  approvers: number;
}
