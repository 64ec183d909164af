/**
 * One tenant's budget ledger as a workflow of its own (id `kiln-budget-TENANT`), started by the
 * first call that reserves (update-with-start): it lives in Temporal, so workers on any host reserve
 * against the same numbers, and it survives a crash of any of them. Its handlers run one at a time,
 * so two calls racing for the last dollar are decided in order; the state is the pure ledger
 * (src/shared/budget-ledger.ts) and is carried across continue-as-new.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  emptyLedger,
  ledgerView,
  limitChangeProblem,
  release,
  releaseRun,
  reserve,
  setLimit,
  settle,
  type LedgerState,
  type ReserveRequest,
  type SettleRequest,
} from '../shared/budget-ledger.js';
import {
  budgetLimitUpdate,
  budgetQuery,
  budgetReleaseRunSignal,
  budgetReleaseUpdate,
  budgetReserveUpdate,
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
  setHandler(budgetReserveUpdate, (r) => reserve(state, r, day()), { validator: reserveProblem });
  setHandler(budgetSettleUpdate, (s) => settle(state, s, day()), { validator: settleProblem });
  setHandler(budgetReleaseUpdate, (key) => release(state, key));
  setHandler(budgetReleaseRunSignal, (runId) => {
    if (typeof runId === 'string') releaseRun(state, runId);
  });
  setHandler(
    budgetLimitUpdate,
    (c) => {
      setLimit(state, c);
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
  await condition(() => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > LEDGER_HISTORY_EVENTS);
  await condition(allHandlersFinished);
  await continueAsNew<typeof kilnBudget>({ tenant: state.tenant, carry: state });
}

const isCount = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** Refused before it reaches the history: a malformed request changes nothing. */
function reserveProblem(r: ReserveRequest): void {
  if (!r || typeof r.key !== 'string' || typeof r.runId !== 'string' || typeof r.repo !== 'string') throw new Error('a reservation needs key, runId and repo');
  if (!isCount(r.tokens) || !isCount(r.usd)) throw new Error('a reservation needs tokens and usd ≥ 0');
}

function settleProblem(s: SettleRequest): void {
  if (!s || typeof s.key !== 'string' || typeof s.message !== 'string' || typeof s.repo !== 'string') throw new Error('a settlement needs key, message and repo');
  const u = s.usage;
  if (!u || ![u.input, u.output, u.cacheRead, u.cacheWrite, s.usd].every(isCount)) throw new Error('a settlement needs its usage and usd');
}
