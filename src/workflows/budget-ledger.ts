/**
 * One tenant's budget ledger as a workflow of its own (id `kiln-budget-TENANT`), started by the
 * first call that reserves (update-with-start): it lives in Temporal, so workers on any host reserve
 * against the same numbers, and it survives a crash of any of them. Its handlers run one at a time,
 * so two calls racing for the last dollar are decided in order; the state is the pure ledger
 * (src/shared/budget-ledger.ts) and is carried across continue-as-new.
 */
import { allHandlersFinished, condition, continueAsNew, metricMeter, setHandler, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import {
  emptyLedger,
  lease,
  ledgerView,
  limitChangeProblem,
  release,
  releaseRun,
  reserve,
  setLimit,
  settle,
  type LeaseRequest,
  type LedgerState,
  type ReserveRequest,
  type SettleRequest,
} from '../shared/budget-ledger.js';
import {
  budgetLeaseUpdate,
  budgetLimitUpdate,
  budgetQuery,
  budgetReleaseRunSignal,
  budgetReleaseUpdate,
  budgetReserveUpdate,
  budgetSettleManyUpdate,
  budgetSettleUpdate,
} from '../shared/messages.js';

/** History events before the ledger continues as new (each call adds a few). */
export const LEDGER_HISTORY_EVENTS = 4000;

export interface LedgerInput {
  tenant: string;
  carry?: LedgerState;
}

export async function kilnBudget(input: LedgerInput): Promise<void> {
  const state = input.carry ?? emptyLedger(input.tenant);
  // the workflow's clock: the same day on replay
  const day = () => new Date().toISOString().slice(0, 10);
  // a change to a repo's scope shows in the gauges at once
  const shown =
    <A extends { repo: string }, R>(apply: (state: LedgerState, a: A, day: string) => R) =>
    (a: A): R => {
      const answer = apply(state, a, day());
      showGauges(state, day(), a.repo);
      return answer;
    };
  setHandler(budgetReserveUpdate, shown(reserve), { validator: reserveProblem });
  setHandler(budgetLeaseUpdate, shown(lease), { validator: leaseProblem });
  setHandler(budgetSettleUpdate, shown(settle), { validator: settleProblem });
  // a lease's remainder goes back after its calls settled: the held gauge must show it gone
  const repoOf = (key: string) => state.open[key]?.scopes.find((s) => s.startsWith('repo:'))?.slice(5);
  setHandler(
    budgetSettleManyUpdate,
    (all) => {
      const counted = all.filter((s) => settle(state, s, day()).counted).length;
      for (const repo of new Set(all.map((s) => s.repo))) showGauges(state, day(), repo);
      return { counted };
    },
    {
      validator: (all) => {
        if (!Array.isArray(all)) throw new Error('settlements come as a list');
        all.forEach(settleProblem);
      },
    },
  );
  setHandler(budgetReleaseUpdate, (key) => {
    const repo = repoOf(key);
    release(state, key);
    showGauges(state, day(), repo);
  });
  setHandler(budgetReleaseRunSignal, (runId) => {
    if (typeof runId !== 'string') return;
    const repos = new Set(
      Object.keys(state.open)
        .filter((k) => state.open[k]!.runId === runId)
        .map(repoOf),
    );
    releaseRun(state, runId);
    for (const repo of repos) showGauges(state, day(), repo);
  });
  setHandler(
    budgetLimitUpdate,
    (c) => {
      setLimit(state, c);
      showGauges(state, day(), c.scope === 'repo' ? c.name : undefined);
      return ledgerView(state, day());
    },
    {
      validator: (c) => {
        const problem = limitChangeProblem(c);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(budgetQuery, () => ledgerView(state, day()));
  const info = workflowInfo;
  await condition(() => info().continueAsNewSuggested || info().historyLength > LEDGER_HISTORY_EVENTS);
  await condition(allHandlersFinished);
  await continueAsNew<typeof kilnBudget>({ tenant: state.tenant, carry: state });
}

/*
 * A ledger never ends, so it must not be pinned like a run: pinned, it would keep the build that
 * started it from draining, and after a deploy every new run's reservation would wait for a worker
 * of the old build. AUTO_UPGRADE moves it to the current build at its next task; the price is that
 * every build must replay the ledger histories earlier builds wrote (the replay tier holds one, and
 * a change to this file goes behind patched() like any workflow change).
 */
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, kilnBudget);

const isCount = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** Refused before it reaches the history: a malformed request changes nothing. */
function reserveProblem(r: ReserveRequest): void {
  if (!r || typeof r.key !== 'string' || typeof r.runId !== 'string' || typeof r.repo !== 'string') throw new Error('a reservation needs key, runId and repo');
  if (!isCount(r.tokens) || !isCount(r.usd)) throw new Error('a reservation needs tokens and usd ≥ 0');
}

function leaseProblem(r: LeaseRequest): void {
  reserveProblem(r);
  if (r.settles !== undefined && !Array.isArray(r.settles)) throw new Error("a lease grant's settles come as a list");
  r.settles?.forEach(settleProblem);
  if (!Number.isInteger(r.grant) || r.grant < 1) throw new Error('a lease grant needs its number (1, 2, …)');
  if (r.spare !== undefined && !(r.spare && isCount(r.spare.tokens) && isCount(r.spare.usd))) throw new Error("a lease grant's spare needs tokens and usd ≥ 0");
}

function settleProblem(s: SettleRequest): void {
  if (!s || typeof s.key !== 'string' || typeof s.message !== 'string' || typeof s.repo !== 'string')
    throw new Error('a settlement needs key, message and repo');
  const u = s.usage;
  if (!u || ![u.input, u.output, u.cacheRead, u.cacheWrite, s.usd].every(isCount)) throw new Error('a settlement needs its usage and usd');
  const l = s.lease;
  if (l !== undefined && !(l && typeof l.key === 'string' && l.frees && isCount(l.frees.tokens) && isCount(l.frees.usd)))
    throw new Error("a leased settlement needs the lease's key and what it frees");
}

// created on first use: the meter exists only inside a workflow context
let gauges:
  | { billed: ReturnType<typeof metricMeter.createGauge>; held: ReturnType<typeof metricMeter.createGauge>; limit: ReturnType<typeof metricMeter.createGauge> }
  | undefined;

/**
 * kiln_budget_billed_usd / _held_usd / _limit_usd {tenant, scope}, for the tenant, today and the
 * repo a call just touched (a parallel run's scope is left out: one series per run is too many).
 * The meter is silent on replay and recording issues no command. docs/metrics.md.
 */
function showGauges(state: LedgerState, today: string, repo?: string): void {
  gauges ??= {
    billed: metricMeter.createGauge('kiln_budget_billed_usd', 'float', 'USD', "what a budget ledger scope was billed (tenant, today's day, a repo)"),
    held: metricMeter.createGauge('kiln_budget_held_usd', 'float', 'USD', "what model calls in flight hold of a scope's budget"),
    limit: metricMeter.createGauge('kiln_budget_limit_usd', 'float', 'USD', "a scope's USD limit (absent: none)"),
  };
  const view = ledgerView(state, today);
  const shown = new Set(['tenant', `day:${today}`, ...(repo ? [`repo:${repo}`] : [])]);
  for (const s of view.scopes) {
    if (!shown.has(s.scope)) continue;
    const tags = { tenant: state.tenant, scope: s.scope.startsWith('day:') ? 'day' : s.scope };
    gauges.billed.set(s.used.usd, tags);
    gauges.held.set(s.held.usd, tags);
    if (s.limit?.usd !== undefined) gauges.limit.set(s.limit.usd, tags);
  }
}
