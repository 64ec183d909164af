/** The budget ledger as clients see it: `kiln budget show|set`, the API and the metrics read and change it here. */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { LEDGER_WORKFLOW_TYPE, ledgerWorkflowId, limitChangeProblem, type LedgerView, type LimitChange } from '../shared/budget-ledger.js';
import { DEFAULT_TASK_QUEUE } from '../shared/constants.js';
import { UsageError } from '../shared/errors.js';
import { budgetLimitUpdate, budgetQuery } from '../shared/messages.js';

/** The tenant's ledger; undefined when no call of the tenant has reserved and no limit was set yet. */
export async function budgetView(client: Client, tenant: string): Promise<LedgerView | undefined> {
  try {
    return await client.workflow.getHandle(ledgerWorkflowId(tenant)).query(budgetQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** Sets (or removes) one limit, starting the tenant's ledger when it has none yet; the ledger as it now is. */
export async function setBudgetLimit(client: Client, tenant: string, change: LimitChange, taskQueue = DEFAULT_TASK_QUEUE): Promise<LedgerView> {
  const problem = limitChangeProblem(change);
  if (problem) throw new UsageError(problem);
  return client.workflow.executeUpdateWithStart(budgetLimitUpdate, {
    args: [change],
    startWorkflowOperation: new WithStartWorkflowOperation(LEDGER_WORKFLOW_TYPE, {
      workflowId: ledgerWorkflowId(tenant),
      taskQueue,
      args: [{ tenant }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}

/** The ledger as text: a line a scope, what it was billed, what calls in flight hold, and its limit. */
export function formatBudget(v: LedgerView | undefined, tenant: string): string {
  if (!v) return `tenant ${tenant}: no model call has reserved and no limit is set`;
  const usd = (n: number) => `$${n.toFixed(6)}`;
  const lines = [
    `tenant ${v.tenant} (day ${v.day} UTC): ${v.open} call${v.open === 1 ? '' : 's'} in flight${v.overruns ? `, ${v.overruns} replies billed over their reservation` : ''}`,
  ];
  for (const s of v.scopes) {
    const tokens = s.used.input + s.used.output + s.used.cacheRead + s.used.cacheWrite;
    const limit = s.limit
      ? [s.limit.tokens !== undefined ? `${s.limit.tokens} tokens` : '', s.limit.usd !== undefined ? usd(s.limit.usd) : ''].filter(Boolean).join(', ')
      : 'no limit';
    lines.push(
      `  ${s.scope}: billed ${tokens} tokens (input ${s.used.input}, output ${s.used.output}, cache read ${s.used.cacheRead}, cache write ${s.used.cacheWrite}) ${usd(s.used.usd)}; ` +
        `held ${s.held.tokens} tokens ${usd(s.held.usd)} by ${s.held.calls} call${s.held.calls === 1 ? '' : 's'}; limit: ${limit}`,
    );
  }
  return lines.join('\n');
}
