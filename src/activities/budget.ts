/**
 * A model call's reservation in its tenant's budget ledger (src/workflows/budget-ledger.ts),
 * reached through the worker's Temporal client: update-with-start, so the first call of a tenant
 * starts its ledger, and an Update ID per call and per reply, so a retried activity neither holds
 * nor counts twice (the ledger keys them too, across its continue-as-new).
 */
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { costUsd } from '../model/index.js';
import {
  LEDGER_WORKFLOW_TYPE,
  ledgerWorkflowId,
  type LeaseRequest,
  type OverBudget,
  type ReserveAnswer,
  type ReserveRequest,
  type SettleRequest,
} from '../shared/budget-ledger.js';
import type { LedgerRef } from '../shared/contracts.js';
import { budgetLeaseUpdate, budgetReleaseUpdate, budgetReserveUpdate, budgetSettleManyUpdate, budgetSettleUpdate } from '../shared/messages.js';
import type { Usage } from '../shared/types.js';
import { KilnError } from '../shared/errors.js';
import type { CallLease } from './budget-lease.js';

/** What the activities ask of the ledger; tests pass one of their own in the activity deps. */
export interface BudgetLedgerPort {
  reserve(ref: LedgerRef, req: ReserveRequest): Promise<ReserveAnswer>;
  /** a grant to a lease (budget-lease.ts); absent: the port has no leases, every call reserves */
  lease?(ref: LedgerRef, req: LeaseRequest): Promise<ReserveAnswer>;
  settle(ref: LedgerRef, s: SettleRequest): Promise<void>;
  /** several billed replies in one update; absent: each is settled on its own */
  settleMany?(ref: LedgerRef, s: SettleRequest[]): Promise<void>;
  release(ref: LedgerRef, key: string): Promise<void>;
}

/**
 * A call the ledger did not let out: the turn hands this back and the run parks (awaiting_budget).
 * It never leaves the activity; were it to, the same call again cannot fit until a person acts.
 */
export class OverBudgetError extends KilnError {
  readonly retryable = false;
  constructor(
    readonly over: OverBudget,
    /** what the turn's earlier calls (replies Kiln refused and asked again) were billed */
    readonly usage: Usage,
    readonly costUsd: number,
  ) {
    super(`over budget: ${over.scope} ${over.limit}`);
  }
}

/** The worst a call may cost: its input as estimated, at the dearer of fresh and cache-write input, plus its whole output limit. */
export function worstCase(model: string, inputTokens: number, maxTokens: number): { tokens: number; usd: number } {
  const fresh = costUsd(model, { input: inputTokens, output: maxTokens, cacheRead: 0, cacheWrite: 0 });
  const written = costUsd(model, { input: 0, output: maxTokens, cacheRead: 0, cacheWrite: inputTokens });
  return { tokens: inputTokens + maxTokens, usd: Math.ceil(Math.max(fresh, written) * 1e6) / 1e6 };
}

/** The ledger through this worker's Temporal client (the activity's context has it). */
export function temporalLedger(): BudgetLedgerPort {
  return {
    reserve: (ref, req) => send(ref, budgetReserveUpdate, req, `reserve:${req.key}`),
    lease: (ref, req) => send(ref, budgetLeaseUpdate, req, leaseUpdateId(req)),
    settle: async (ref, s) => void (await send(ref, budgetSettleUpdate, s, `settle:${s.message}`)),
    settleMany: async (ref, all) =>
      void (await send(
        ref,
        budgetSettleManyUpdate,
        all,
        `settle:${all
          .map((s) => s.message)
          .join(',')
          .slice(0, 200)}:${all.length}`,
      )),
    release: (ref, key) => send(ref, budgetReleaseUpdate, key, `release:${key}`),
  };
}

/** The server answers an update ID once: the lease's asks must each have their own. */
export const leaseUpdateId = (req: LeaseRequest): string => `lease:${req.key}:${req.grant}`;

async function send<R, A>(ref: LedgerRef, def: UpdateDefinition<R, [A]>, arg: A, updateId: string): Promise<R> {
  const ctx = Context.current();
  return ctx.client.workflow.executeUpdateWithStart(def, {
    args: [arg],
    // the client's own retries of one request are one update; the same call asked again by another
    // activity or attempt (after a release, a park) is a new one (the ledger's key map still holds a call once)
    updateId: `${updateId}:${ctx.info.activityId}:${ctx.info.attempt}`,
    startWorkflowOperation: new WithStartWorkflowOperation(LEDGER_WORKFLOW_TYPE, {
      workflowId: ledgerWorkflowId(ref.tenant),
      taskQueue: ref.taskQueue,
      args: [{ tenant: ref.tenant }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}

/** How long a billed reply may wait to be told with others when the activity holds a lease. */
export const SETTLE_EVERY_MS = 250;

/**
 * The settles of an activity's billed replies. Each leaves as soon as the stream states the usage
 * and is not waited for on the turn's path (it overlaps the rest of the turn: reading the reply,
 * the tools, the next turn's request); the activity waits for all of them before it completes.
 * Until then the call's worst case stays held, so the ledger only ever errs high. A worker that
 * dies first leaves them to the retried activity, which settles every reply its stored turns were
 * billed for again, from model-calls.jsonl (a message counts once).
 *
 * With a lease, replies are told together, one update for all billed within SETTLE_EVERY_MS (or
 * riding the lease's next grant, so the ledger weighs it with them): a turn of a few milliseconds
 * does not cost the ledger an update each. The lease's own count already freed their worst cases.
 */
export class Settling {
  private readonly pending: Array<Promise<void>> = [];
  private failure: unknown;
  private queued: SettleRequest[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** the activity's lease its coder calls spend (budget-lease.ts); absent: each call reserves on its own */
  lease?: CallLease;

  constructor(private readonly sink?: { port: BudgetLedgerPort; ref: LedgerRef }) {}

  add(p: Promise<void>): void {
    // handled at once: a rejection nobody awaits yet must not end the worker
    this.pending.push(p.then(undefined, (err: unknown) => void (this.failure ??= err)));
  }

  /** A billed reply: told with others while the lease works, else at once. */
  settle(req: SettleRequest): void {
    const port = this.sink?.port;
    if (!port) return;
    if (!port.settleMany || !this.lease || this.lease.unsupported) return this.add(port.settle(this.sink!.ref, req));
    this.queued.push(req);
    this.timer ??= setTimeout(() => this.flush(), SETTLE_EVERY_MS);
  }

  /** The replies waiting to be told, taken by the lease's next grant. */
  drain(): SettleRequest[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const all = this.queued;
    this.queued = [];
    return all;
  }

  /** Replies a grant took that never reached the ledger (it had no leases): told one by one. */
  resend(all: SettleRequest[]): void {
    for (const s of all) this.add(this.sink!.port.settle(this.sink!.ref, s));
  }

  private flush(): void {
    const all = this.drain();
    if (all.length) this.add(this.sink!.port.settleMany!(this.sink!.ref, all));
  }

  /** Every settle answered, and the lease given back (a settle that comes after it still counts). */
  async done(): Promise<void> {
    this.flush();
    await Promise.all([...this.pending, this.lease?.end().catch((err: unknown) => void (this.failure ??= err))]);
    if (this.failure !== undefined) throw this.failure;
  }

  /** The activity failed: its replies are told and what the lease holds goes back all the same (the run's end would release it too). */
  abandon(): void {
    this.flush();
    void this.lease?.end().catch(() => undefined);
  }
}
