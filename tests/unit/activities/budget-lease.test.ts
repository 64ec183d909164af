/**
 * The lease a turn activity's calls spend, against the real pure ledger behind an in-memory port:
 * far from every limit the calls make few trips to the ledger; near one a call is refused exactly
 * when a reservation of its own would be; whatever the calls do, no scope's billed plus held ever
 * passes its limit, and a settled reply leaves only what it cost.
 */
import { describe, expect, it } from 'vitest';
import { leaseUpdateId, Settling, type BudgetLedgerPort } from '../../../src/activities/budget.js';
import { CallLease, LEASE_CALLS, type Amount } from '../../../src/activities/budget-lease.js';
import {
  emptyLedger,
  lease,
  ledgerView,
  release,
  reserve,
  setLimit,
  settle,
  spendTokens,
  type LedgerState,
  type Limit,
} from '../../../src/shared/budget-ledger.js';

const DAY = '2026-12-07';
const REF = { tenant: 'acme', taskQueue: 'q' };
const OWNER = { runId: 'r1', repo: '/repo' };
const usage = (input: number, output: number) => ({ input, output, cacheRead: 0, cacheWrite: 0 });

/** The ledger workflow's handlers, one at a time, with the trips counted; an update ID is answered once, as the server does. */
function memoryLedger(state: LedgerState, opts: { leases?: boolean } = {}) {
  const trips = { lease: 0, reserve: 0, settle: 0, settleMany: 0, release: 0 };
  const answered = new Map<string, ReturnType<typeof lease>>();
  const port: BudgetLedgerPort = {
    reserve: async (_r, q) => (trips.reserve++, reserve(state, q, DAY)),
    ...(opts.leases === false
      ? {}
      : {
          lease: async (_r: unknown, q: Parameters<typeof lease>[1]) => {
            trips.lease++;
            const id = leaseUpdateId(q);
            if (!answered.has(id)) answered.set(id, lease(state, q, DAY));
            return answered.get(id)!;
          },
        }),
    settle: async (_r, s) => void (trips.settle++, settle(state, s, DAY)),
    settleMany: async (_r, all) => void (trips.settleMany++, all.forEach((s) => settle(state, s, DAY))),
    release: async (_r, k) => void (trips.release++, release(state, k)),
  };
  return { port, trips };
}

const tenant = (s: LedgerState) => ledgerView(s, DAY).scopes.find((v) => v.scope === 'tenant')!;

function limited(limit: Limit): LedgerState {
  const s = emptyLedger('acme');
  setLimit(s, { scope: 'tenant', limit, by: 'op' });
  return s;
}

/** Spends one call from the lease and settles it as billed for `cost` tokens. */
async function call(l: CallLease, port: BudgetLedgerPort, need: Amount, n: number, cost: number) {
  const answer = await l.take(need);
  if (!answer?.ok) return answer;
  await port.settle(REF, { key: `c${n}`, ...OWNER, message: `m${n}`, usage: usage(cost, 0), usd: 0, lease: { key: l.key, frees: need } });
  return answer;
}

describe('a call lease', () => {
  it('far from every limit: twenty calls make a handful of grants, and the lease gives back what it holds at the end', async () => {
    const state = limited({ tokens: 10_000_000 });
    const { port, trips } = memoryLedger(state);
    const l = new CallLease(port, REF, 'lease:r1', OWNER);
    for (let n = 1; n <= 20; n++) expect(await call(l, port, { tokens: 1000, usd: 0 }, n, 300)).toEqual({ ok: true });
    expect(trips.lease).toBeLessThanOrEqual(Math.ceil(20 / (LEASE_CALLS - 1)) + 1);
    await l.end();
    expect(tenant(state).used.input).toBe(20 * 300);
    expect(tenant(state).held).toEqual({ tokens: 0, usd: 0, calls: 0 });
  });

  it('near a limit each call asks for exactly what it lacks, and the refusal names the whole call as a reservation would', async () => {
    const state = limited({ tokens: 2500 });
    const { port } = memoryLedger(state);
    const l = new CallLease(port, REF, 'lease:r1', OWNER);
    expect(await call(l, port, { tokens: 1000, usd: 0 }, 1, 1000)).toEqual({ ok: true });
    expect(await call(l, port, { tokens: 1000, usd: 0 }, 2, 1000)).toEqual({ ok: true });
    // 2000 billed, 500 left: the call of 1000 does not fit, and is not sent
    const third = await l.take({ tokens: 1000, usd: 0 });
    expect(third).toEqual({ ok: false, over: { scope: 'tenant', limit: 'tokens', max: 2500, used: 2000, held: 0, need: 1000 } });
    // the one that fits still goes
    expect(await l.take({ tokens: 500, usd: 0 })).toEqual({ ok: true });
  });

  it('asks for the next grant while two calls are left: with a grant slower than a turn, no call after the first waits on one', async () => {
    const { port } = memoryLedger(limited({ tokens: 10_000_000 }));
    // each grant comes back only after the call after the one that asked for it
    const asked: Array<{ at: number; answer: () => void }> = [];
    let call = 1;
    const slow: BudgetLedgerPort = {
      ...port,
      lease: (r, q) => new Promise((res) => asked.push({ at: call, answer: () => res(port.lease!(r, q)) })),
    };
    const l = new CallLease(slow, REF, 'lease:r1', OWNER);
    const need = { tokens: 1000, usd: 0 };
    const tick = () => new Promise((res) => setImmediate(res));
    for (; call <= 20; call++) {
      let taken = false;
      const p = l.take(need).then((a) => ((taken = true), a));
      await tick();
      if (call === 1) asked.shift()!.answer();
      else expect(taken, `call ${call} waited on a grant`).toBe(true);
      expect(await p).toEqual({ ok: true });
      for (const a of asked.filter((x) => x.at < call)) {
        asked.splice(asked.indexOf(a), 1);
        a.answer();
      }
      await tick();
    }
  });

  it('a call that ended unbilled puts its worst case back: the next spends it without a trip', async () => {
    const state = limited({ tokens: 1000 });
    const { port, trips } = memoryLedger(state);
    const l = new CallLease(port, REF, 'lease:r1', OWNER);
    expect(await l.take({ tokens: 1000, usd: 0 })).toEqual({ ok: true });
    l.giveBack({ tokens: 1000, usd: 0 });
    const before = trips.lease;
    expect(await l.take({ tokens: 1000, usd: 0 })).toEqual({ ok: true });
    expect(trips.lease).toBe(before);
  });

  it('a ledger without leases (an older build): the lease says so, and the calls reserve on their own', async () => {
    const { port } = memoryLedger(emptyLedger('acme'), { leases: false });
    expect(await new CallLease(port, REF, 'lease:r1', OWNER).take({ tokens: 1, usd: 0 })).toBeUndefined();
    const failing: BudgetLedgerPort = { ...port, lease: async () => Promise.reject(new Error('No registered handler for update: budgetLease')) };
    const l = new CallLease(failing, REF, 'lease:r1', OWNER);
    expect(await l.take({ tokens: 1, usd: 0 })).toBeUndefined();
    expect(l.unsupported).toBe(true);
  });

  // the principle, not an example: against any order of calls, replies and limits, a lease refuses
  // exactly the calls a reservation each would refuse, and no scope ever holds more than its limit
  async function randomRuns(overrun: number, told: 'at once' | 'with the next grant' = 'at once') {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let trial = 0; trial < 200; trial++) {
      const limit = { tokens: 1000 + Math.floor(rand() * 40_000), usd: Math.round(rand() * 5 * 1e6) / 1e6 + 0.01 };
      const leased = limited(limit);
      const plain = limited(limit);
      const { port } = memoryLedger(leased);
      const books = new Settling({ port, ref: REF });
      const l = new CallLease(port, REF, 'lease:r1', OWNER, books);
      books.lease = l;
      let overran = { tokens: 0, usd: 0 };
      for (let n = 1; n <= 30; n++) {
        const need = { tokens: 100 + Math.floor(rand() * 3000), usd: Math.round(rand() * 0.3 * 1e6) / 1e6 };
        const fate = rand();
        const billed = usage(Math.floor(need.tokens * rand() * overrun), 0);
        const usd = Math.round(need.usd * rand() * overrun * 1e6) / 1e6;
        const a = await l.take(need);
        const b = reserve(plain, { key: `c${n}`, ...OWNER, ...need }, DAY);
        expect(a?.ok === true, `trial ${trial} call ${n}`).toBe(b.ok);
        if (!a?.ok && !b.ok) expect(a!.over).toEqual(b.over);
        if (a?.ok) {
          // what can pass a limit is only what replies cost beyond their calls' worst cases
          const view = tenant(leased);
          expect(spendTokens(view.used) + view.held.tokens).toBeLessThanOrEqual(limit.tokens + overran.tokens);
          expect(view.used.usd + view.held.usd).toBeLessThanOrEqual(limit.usd + overran.usd + 1e-9);
        }
        if (!a?.ok) continue;
        if (fate < 0.15) {
          l.giveBack(need);
          release(plain, `c${n}`);
          continue;
        }
        {
          l.billed(need, { tokens: spendTokens(billed), usd });
          const req = { key: `c${n}`, ...OWNER, message: `m${n}`, usage: billed, usd, lease: { key: l.key, frees: need } };
          if (told === 'at once') settle(leased, req, DAY);
          else books.settle(req);
          overran = { tokens: overran.tokens + Math.max(0, spendTokens(billed) - need.tokens), usd: overran.usd + Math.max(0, usd - need.usd) };
        }
        settle(plain, { key: `c${n}`, ...OWNER, message: `m${n}`, usage: billed, usd }, DAY);
      }
      await books.done();
      expect(tenant(leased).held.calls).toBe(0);
      expect(tenant(leased).used).toEqual(tenant(plain).used);
    }
  }

  it('random runs, replies within their worst case: the lease refuses exactly the calls a reservation each would, and billed + held never passes a limit', async () => {
    await randomRuns(1);
  });

  it('random runs with replies that cost more than reserved: the lease still refuses exactly the calls a reservation each would', async () => {
    await randomRuns(1.6);
  });

  it('random runs whose replies are told only with the next grant: the ledger weighs each grant with them, so the refusals stay exact', async () => {
    await randomRuns(1.6, 'with the next grant');
  });

  it('billed replies are told together: twenty calls far from a limit cost the ledger a handful of updates, and it ends with every reply counted and nothing held', async () => {
    const state = limited({ tokens: 10_000_000 });
    const { port, trips } = memoryLedger(state);
    const books = new Settling({ port, ref: REF });
    const l = (books.lease = new CallLease(port, REF, 'lease:r1', OWNER, books));
    for (let n = 1; n <= 20; n++) {
      const need = { tokens: 1000, usd: 0 };
      expect(await l.take(need)).toEqual({ ok: true });
      l.billed(need, { tokens: 300, usd: 0 });
      books.settle({ key: `c${n}`, ...OWNER, message: `m${n}`, usage: usage(300, 0), usd: 0, lease: { key: l.key, frees: need } });
    }
    await books.done();
    expect(trips.settle).toBe(0);
    expect(trips.lease + trips.settleMany + trips.release).toBeLessThan(12);
    expect(tenant(state).used.input).toBe(20 * 300);
    expect(tenant(state).held).toEqual({ tokens: 0, usd: 0, calls: 0 });
  });
});
