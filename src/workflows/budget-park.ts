/**
 * The run's side of the budget ledger (src/workflows/budget-ledger.ts): which ledger and scopes its
 * calls reserve against, the park when a call does not fit (awaiting_budget: a person raises the
 * limit and approves, rejects, or cancels the run), and the release of what its killed calls still
 * hold when it ends.
 */
import { getExternalWorkflowHandle, patched, workflowInfo } from '@temporalio/workflow';
import { DEFAULT_TENANT, describeOver, ledgerWorkflowId, type OverBudget } from '../shared/budget-ledger.js';
import type { LedgerRef, ToolCallView } from '../shared/contracts.js';
import { budgetReleaseRunSignal } from '../shared/messages.js';
import { KilnTenant } from '../shared/search-attributes.js';
import type { AttemptEnd } from './attempt.js';
import { askPeople } from './approvals.js';
import type { RunContext } from './context.js';

/**
 * The tenant is the one `kiln serve` set at the start (a search attribute, vouched by its token
 * store; a fan-out hands it to its children); a run started without one counts as the default
 * tenant. An attempt of a parallel run also counts against its parent, whose cap is the run's own
 * budget: the attempts together spend no more than one run would.
 */
export function ledgerRef(ctx: RunContext): LedgerRef {
  const info = workflowInfo();
  const tenant = info.typedSearchAttributes.get(KilnTenant) ?? DEFAULT_TENANT;
  const b = ctx.input.budgets;
  return {
    tenant,
    taskQueue: info.taskQueue,
    ...(info.parent ? { parent: { runId: info.parent.workflowId, cap: { tokens: b.maxTokens, usd: b.maxUsd } } } : {}),
  };
}

/**
 * The turn's model call was not sent: the run waits for a person. Approved (after raising the
 * limit with `kiln budget set`), the turn is taken again and reserves again, so an approval
 * without a raise parks it once more; rejected, the run ends blocked; unanswered, a person decides.
 */
export async function parkForBudget(ctx: RunContext, over: OverBudget, after?: 'verifying'): Promise<AttemptEnd | undefined> {
  const { state } = ctx;
  const back = after ?? (state.phase === 'planning' ? 'planning' : 'editing');
  const reason = describeOver(over, ledgerRef(ctx).tenant);
  const summary = `budget ${over.scope}: the next model call needs ${over.need} ${over.limit === 'usd' ? 'USD' : 'tokens'}, ${over.max} allowed`;
  const call: ToolCallView = { id: `budget-${state.turn + 1}`, name: 'budget', fingerprint: `budget:${over.scope}:${over.limit}`, summary };
  const answer = await askPeople(ctx, call, { status: 'ask', summary, rule: 'budget-ledger', reason }, 'awaiting_budget');
  if (answer.kind === 'timeout') return { kind: 'approval_timeout', approvalId: answer.approvalId };
  if (!answer.approve) return { kind: 'budget', which: `${over.scope} ${over.limit} (${over.max}): ${answer.by} rejected the call over it` };
  ctx.phase(back, `${answer.by} approved the call over ${over.scope}: it reserves again`);
  return undefined;
}

/** The run ended: whatever its calls still hold (a worker killed mid-call) is let go. */
export async function releaseLeftovers(ctx: RunContext): Promise<void> {
  if (!patched('budget-ledger-release')) return;
  await getExternalWorkflowHandle(ledgerWorkflowId(ledgerRef(ctx).tenant))
    .signal(budgetReleaseRunSignal, ctx.input.runId)
    .catch(() => undefined);
}
