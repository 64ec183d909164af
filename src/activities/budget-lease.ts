/**
 * A turn activity's lease in the budget ledger: one hold, granted by the ledger when it fits every
 * limit, that the activity's model calls spend their worst cases from without a trip to the ledger
 * each. Far from every limit the lease is granted several calls ahead, and asked for more while a
 * call is still in flight, so a turn's path has no round trip to the ledger; near a limit it holds
 * exactly what the next call lacks, so a call is refused exactly when a reservation of its own
 * would have been. Every billed reply still settles on its own, with the worst case it took from
 * the lease; what the lease still holds goes back when the activity ends (or, if its worker dies,
 * when the run ends: the run's end releases every hold it left).
 */
import { round6, type LeaseRequest, type Limit, type OverBudget, type ReserveAnswer, type SettleRequest } from '../shared/budget-ledger.js';
import type { LedgerRef } from '../shared/contracts.js';
import type { BudgetLedgerPort } from './budget.js';

/** Calls' worst cases a lease asks for ahead of need, and leaves spare in every limited scope. */
export const LEASE_CALLS = 4;

export interface Amount {
  tokens: number;
  usd: number;
}

interface Owner {
  runId: string;
  repo: string;
  parent?: { runId: string; cap: Limit };
}

export class CallLease {
  /** what the ledger holds for the lease, counted the way the ledger counts it */
  private held: Amount = { tokens: 0, usd: 0 };
  /** the worst cases of the calls taken and not yet billed or given back */
  private inFlight: Amount = { tokens: 0, usd: 0 };
  /** grants asked so far, refused ones too: each ask has its own number, so a refused one is never taken for the next */
  private asked = 0;
  private granted = false;
  /** the grant asked ahead of need, in flight */
  private ahead?: Promise<void>;
  /** an ask ahead was refused: this activity runs near a limit, and asks only for what a call lacks */
  private nearLimit = false;
  /** the ledger answered a grant with an error (a build without leases): the calls reserve on their own */
  unsupported = false;

  constructor(
    private readonly port: BudgetLedgerPort,
    private readonly ref: LedgerRef,
    readonly key: string,
    private readonly owner: Owner,
    /** the activity's billed replies not yet told: a grant carries them, so the ledger weighs it with them */
    private readonly books?: { drain(): SettleRequest[]; resend(all: SettleRequest[]): void },
  ) {
    if (!port.lease) this.unsupported = true;
  }

  /**
   * Takes a call's worst case from the lease, asking the ledger for what it lacks; undefined when
   * the ledger has no leases, and the call must reserve on its own.
   */
  async take(need: Amount): Promise<ReserveAnswer | undefined> {
    if (!covers(this.pool, need) && this.ahead) await this.ahead;
    if (this.unsupported) return undefined;
    if (!covers(this.pool, need)) {
      const answer = await this.askFor(need);
      if (!answer?.ok) return answer;
    }
    this.inFlight = plus(this.inFlight, need);
    // asked while two calls' worth is left, so that it is back before the pool runs dry (a grant
    // takes a round trip, a fast turn less)
    if (!covers(this.pool, times(need, 2)) && !this.nearLimit && !this.ahead) this.askAhead(need);
    return { ok: true };
  }

  /** A call that ended unbilled puts its worst case back. */
  giveBack(need: Amount): void {
    this.inFlight = minus(this.inFlight, need);
  }

  /**
   * A call's reply was billed: its worst case leaves the hold, and so does whatever it cost beyond
   * that, exactly as the ledger settles it (budget-ledger.ts settle), so the two agree on what is left.
   */
  billed(need: Amount, cost: Amount): void {
    this.inFlight = minus(this.inFlight, need);
    this.held = atLeastZero(minus(this.held, { tokens: Math.max(need.tokens, cost.tokens), usd: Math.max(need.usd, cost.usd) }));
  }

  /** what the lease holds that no call in flight has taken */
  private get pool(): Amount {
    return minus(this.held, this.inFlight);
  }

  /** What the lease still holds goes back to the ledger. */
  async end(): Promise<void> {
    await this.ahead;
    if (this.granted) await this.port.release(this.ref, this.key);
  }

  /** On the call's path: several calls ahead while that leaves room, else exactly what the call lacks. */
  private async askFor(need: Amount): Promise<ReserveAnswer | undefined> {
    const lacks = atLeastZero(minus(need, this.pool));
    if (!this.nearLimit) {
      const wide = await this.grant(plus(lacks, times(need, LEASE_CALLS - 1)), times(need, LEASE_CALLS));
      if (wide?.ok || wide === undefined) return wide;
      this.nearLimit = true;
    }
    const exact = await this.grant(lacks);
    if (!exact || exact.ok) return exact;
    return { ok: false, over: asTheCall(exact.over, need, this.pool) };
  }

  private askAhead(need: Amount): void {
    this.ahead = this.grant(times(need, LEASE_CALLS), times(need, LEASE_CALLS)).then(
      (answer) => {
        if (answer && !answer.ok) this.nearLimit = true;
        this.ahead = undefined;
      },
      () => void (this.ahead = undefined),
    );
  }

  /** One grant; its amount joins the pool when the ledger gives it. */
  private async grant(amount: Amount, spare?: Amount): Promise<ReserveAnswer | undefined> {
    const settles = this.books?.drain() ?? [];
    const req: LeaseRequest = {
      key: this.key,
      ...this.owner,
      grant: ++this.asked,
      ...amount,
      ...(spare ? { spare } : {}),
      ...(settles.length ? { settles } : {}),
    };
    let answer: ReserveAnswer;
    try {
      answer = await this.port.lease!(this.ref, req);
    } catch {
      // a ledger of a build before leases has no handler for the grant: each call reserves as it did
      this.unsupported = true;
      this.books?.resend(settles);
      return undefined;
    }
    if (answer.ok) {
      this.granted = true;
      this.held = plus(this.held, amount);
    }
    return answer;
  }
}

/** The refusal said as the call's: all of its worst case needed, the lease's unspent part not counted as held by others. */
function asTheCall(over: OverBudget, need: Amount, pool: Amount): OverBudget {
  const m = over.limit;
  const round = (n: number) => (m === 'usd' ? round6(n) : n);
  return { ...over, need: round(need[m]), held: round(Math.max(0, over.held - pool[m])) };
}

const covers = (pool: Amount, need: Amount) => pool.tokens >= need.tokens && pool.usd >= need.usd - 1e-12;
const plus = (a: Amount, b: Amount): Amount => ({ tokens: a.tokens + b.tokens, usd: round6(a.usd + b.usd) });
const minus = (a: Amount, b: Amount): Amount => ({ tokens: a.tokens - b.tokens, usd: round6(a.usd - b.usd) });
const times = (a: Amount, n: number): Amount => ({ tokens: a.tokens * n, usd: round6(a.usd * n) });
const atLeastZero = (a: Amount): Amount => ({ tokens: Math.max(0, a.tokens), usd: Math.max(0, a.usd) });
