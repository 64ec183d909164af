/** What `kiln budget show|set` do when they run. */
import { userInfo } from 'node:os';
import { budgetView, formatBudget, setBudgetLimit } from '../../client/budget.js';
import type { Limit, LimitChange } from '../../shared/budget-ledger.js';
import { repoKey } from '../../client/fleet-query.js';
import { CliError, UsageError } from '../../shared/errors.js';
import { temporalSettings } from '../../temporal/connection.js';
import type { SetFlags } from '../commands/budget.js';
import { connectClient } from '../with-run.js';

export async function showBudget(o: { tenant: string; json?: boolean }, out: (s: string) => void): Promise<void> {
  const { client, connection } = await connectClient();
  try {
    const v = await budgetView(client, o.tenant);
    out(o.json ? JSON.stringify(v ?? null) : formatBudget(v, o.tenant));
  } finally {
    await connection.close();
  }
}

/** How long `kiln budget set` waits for a worker to record the limit. */
const SET_WAIT_MS = 15_000;

export async function setBudget(o: SetFlags, out: (s: string) => void): Promise<void> {
  const change = limitChangeOf(o);
  // a run's repo is its top-level directory, as `kiln run` resolved it
  if (change.scope === 'repo') change.name = await repoKey(change.name!);
  const { client, connection } = await connectClient();
  try {
    const queue = temporalSettings().taskQueue;
    // the ledger is a workflow: a worker on the queue records the limit, and without one the update waits
    const v = await client
      .withDeadline(Date.now() + SET_WAIT_MS, () => setBudgetLimit(client, o.tenant, change, queue))
      .catch((err: unknown) => {
        if (err instanceof UsageError) throw err;
        throw new CliError(
          `no worker on queue ${queue} answered within ${SET_WAIT_MS / 1000} s, so the limit may not be set: start one (kiln dev or kiln worker) and set it again (${(err as Error).message})`,
        );
      });
    out(formatBudget(v, o.tenant));
    out('runs parked on this limit (kiln status: awaiting_budget) try their call again once approved: kiln approve RUN APPROVAL');
  } finally {
    await connection.close();
  }
}

/** The flags as one limit change; a wrong combination is said in one line. */
export function limitChangeOf(o: SetFlags): LimitChange {
  const picked = [o.tenantWide && 'tenant', o.day && 'day', o.repo !== undefined && 'repo', o.parent !== undefined && 'parent'].filter(
    Boolean,
  ) as LimitChange['scope'][];
  if (picked.length !== 1) throw new UsageError('name exactly one scope: --tenant-wide, --day, --repo DIR or --parent RUN');
  const scope = picked[0]!;
  const number = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0 || v.trim() === '') throw new UsageError(`--${flag} ${v}: expected a number ≥ 0`);
    return n;
  };
  const limit: Limit = { tokens: number('tokens', o.tokens), usd: number('usd', o.usd) };
  if (o.remove && (limit.tokens !== undefined || limit.usd !== undefined)) throw new UsageError('--remove takes no --tokens or --usd');
  if (!o.remove && limit.tokens === undefined && limit.usd === undefined) throw new UsageError('give --tokens N, --usd N, or --remove');
  return {
    scope,
    ...(scope === 'repo' ? { name: o.repo } : scope === 'parent' ? { name: o.parent } : {}),
    limit: o.remove ? null : limit,
    by: o.by ?? userInfo().username,
  };
}
