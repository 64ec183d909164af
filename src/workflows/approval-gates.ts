/**
 * Approvals that are not a tool call: the setup the policy names (it runs with network) waits
 * for its approvers before it runs, and a patch over the policy's size waits for its approvers
 * before the run may succeed. Both are asked the way a call is (./approvals.ts): the same
 * counting of different authenticated people, the same audit lines, the same inbox entry.
 */
import type { HeldSetup, RunToolResult, ToolCallView } from '../shared/contracts.js';
import { askPeople, type Answer } from './approvals.js';
import type { RunContext } from './context.js';
import { hostOptions } from './options.js';

type Ask = Extract<RunToolResult, { status: 'ask' }>;

/** Why the held setup may not run, or undefined once its approvers approved it. */
export async function approveSetup(ctx: RunContext, held: HeldSetup): Promise<string | undefined> {
  const summary = `setup: ${held.commands.join(' && ')}`.slice(0, 280) + ' (with network)';
  const call: ToolCallView = { id: 'setup', name: 'setup', fingerprint: `setup:${held.hash}`, summary };
  const answer = await askPeople(ctx, call, ask(summary, held.rule, held.reason, held.hash, held.needs));
  return refusal(answer, 'the setup');
}

/**
 * Why the patch may not ship yet, or undefined: under the policy's size, or approved. `tree` is
 * the tree that would ship (the verified one); without it the worktree's is measured.
 */
export async function approvePatch(ctx: RunContext, tree?: string): Promise<string | undefined> {
  if (!ctx.prep?.patchRule) return undefined;
  const judged = await ctx.host!.judgePatch.executeWithOptions({ ...hostOptions(ctx.input), summary: 'the patch against approvals.patch' }, [
    { ...ctx.ref(), events: ctx.takeUnwritten(), ...(tree ? { tree } : {}) },
  ]);
  if (!judged.ask) {
    ctx.note('note', `patch: ${judged.lines} changed lines, within the policy's ${ctx.prep.patchRule.overLines}`);
    return undefined;
  }
  const summary = `patch: ${judged.lines} changed lines in ${judged.files} file${judged.files === 1 ? '' : 's'}`;
  const call: ToolCallView = { id: `patch-${judged.tree.slice(0, 12)}`, name: 'patch', fingerprint: `patch:${judged.tree}`, summary };
  const answer = await askPeople(ctx, call, ask(summary, judged.ask.rule, judged.ask.reason, judged.tree, judged.ask.needs));
  return refusal(answer, `the patch (${judged.lines} changed lines)`);
}

/** One approver whom anyone may be takes the one-decision path; more, or authenticated only, are counted. */
function ask(summary: string, rule: string, reason: string, hash: string, needs: { approvers: number; authenticated: boolean; starterCounts?: boolean }): Ask {
  return { status: 'ask', summary, rule, reason, hash, ...(needs.approvers > 1 || needs.authenticated ? { needs } : {}) };
}

function refusal(answer: Answer, what: string): string | undefined {
  if (answer.kind === 'timeout') return `approval ${answer.approvalId} of ${what} timed out`;
  if (answer.approve) return undefined;
  return `${what} was rejected by ${answer.by}: ${answer.reason?.trim() || 'no reason given'}`;
}
