/** The budget ledger's pure logic: what a call may hold, what a reply counts, and the races and retries around them. */
import { describe, expect, it } from 'vitest';
import {
  describeOver,
  emptyLedger,
  lease,
  ledgerView,
  limitChangeProblem,
  MAX_BILLED_IDS,
  release,
  releaseRun,
  reserve,
  setLimit,
  settle,
  type ReserveRequest,
} from '../../../src/shared/budget-ledger.js';

const DAY = '2026-12-07';
const req = (key: string, tokens: number, usd = 0, extra: Partial<ReserveRequest> = {}): ReserveRequest => ({
  key,
  runId: 'r1',
  repo: '/repo',
  tokens,
  usd,
  ...extra,
});
const usage = (input: number, output: number) => ({ input, output, cacheRead: 0, cacheWrite: 0 });
const scope = (l: ReturnType<typeof emptyLedger>, s: string) => ledgerView(l, DAY).scopes.find((v) => v.scope === s)!;

describe('reserve', () => {
  it('holds a call that fits and refuses the one that would cross a limit, naming the limit and the shortfall', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'repo', name: '/repo', limit: { tokens: 1000 }, by: 'op' });
    expect(reserve(l, req('c1', 600), DAY)).toEqual({ ok: true });
    const no = reserve(l, req('c2', 500), DAY);
    expect(no).toEqual({ ok: false, over: { scope: 'repo:/repo', limit: 'tokens', max: 1000, used: 0, held: 600, need: 500 } });
    expect(describeOver((no as { over: never }).over, 'acme')).toMatch(/short by 100 tokens.*kiln budget set --tenant acme --repo \/repo --tokens/);
    // exactly at the limit fits: the limit is what may be spent, not one less
    expect(reserve(l, req('c3', 400), DAY)).toEqual({ ok: true });
  });

  it('the same call asked again (a retried activity) holds once', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'tenant', limit: { tokens: 1000 }, by: 'op' });
    expect(reserve(l, req('c1', 700), DAY).ok).toBe(true);
    expect(reserve(l, req('c1', 700), DAY).ok).toBe(true);
    expect(scope(l, 'tenant').held).toEqual({ tokens: 700, usd: 0, calls: 1 });
  });

  it('two children racing for the last dollar: the first served holds it, the second is refused by the parent cap', () => {
    const l = emptyLedger('acme');
    const parent = { runId: 'p', cap: { usd: 1 } };
    expect(reserve(l, req('a1:1', 10, 0.6, { runId: 'p-a1', parent }), DAY).ok).toBe(true);
    const second = reserve(l, req('a2:1', 10, 0.6, { runId: 'p-a2', parent }), DAY);
    expect(second).toMatchObject({ ok: false, over: { scope: 'parent:p', limit: 'usd', max: 1, held: 0.6, need: 0.6 } });
    // a cap a later child names does not replace the one a person raised
    setLimit(l, { scope: 'parent', name: 'p', limit: { usd: 2 }, by: 'op' });
    expect(reserve(l, req('a2:1', 10, 0.6, { runId: 'p-a2', parent }), DAY).ok).toBe(true);
  });

  it('every scope counts: tenant, day and repo limits refuse in their own name', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'day', limit: { usd: 0.5 }, by: 'op' });
    const day = reserve(l, req('c1', 1, 0.6), DAY);
    expect(day).toMatchObject({ ok: false, over: { scope: `day:${DAY}`, limit: 'usd' } });
    expect(describeOver((day as { over: never }).over, 'acme')).toMatch(/short by \$0\.1000.*--day --usd N/);
    setLimit(l, { scope: 'tenant', limit: { tokens: 0 }, by: 'op' });
    expect(describeOver((reserve(l, req('c9', 1), DAY) as { over: never }).over, 'acme')).toMatch(/budget tenant .*--tenant-wide --tokens N/);
    setLimit(l, { scope: 'tenant', limit: null, by: 'op' });
    setLimit(l, { scope: 'day', limit: null, by: 'op' });
    expect(reserve(l, req('c1', 1, 0.6), DAY).ok).toBe(true);
  });
});

describe('settle and release', () => {
  it('a reply counts what the API billed against every scope of its call, once per message', () => {
    const l = emptyLedger('acme');
    reserve(l, req('c1', 5000, 0.1, { parent: { runId: 'p', cap: {} } }), DAY);
    expect(settle(l, { key: 'c1', runId: 'r1', repo: '/repo', message: 'msg_1', usage: usage(120, 30), usd: 0.01 }, DAY)).toEqual({ counted: true });
    // told again (a settle whose answer was lost, sent again): not counted twice
    expect(settle(l, { key: 'c1', runId: 'r1', repo: '/repo', message: 'msg_1', usage: usage(120, 30), usd: 0.01 }, DAY)).toEqual({ counted: false });
    for (const s of ['tenant', 'repo:/repo', `day:${DAY}`, 'parent:p']) {
      expect(scope(l, s).used).toMatchObject({ input: 120, output: 30, usd: 0.01 });
      expect(scope(l, s).held.calls).toBe(0);
    }
  });

  it('a reply that cost more than its call reserved is counted as billed (an overrun), and the next call that does not fit is refused', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'tenant', limit: { tokens: 1000 }, by: 'op' });
    reserve(l, req('c1', 500), DAY);
    settle(l, { key: 'c1', runId: 'r1', repo: '/repo', message: 'm1', usage: usage(700, 200), usd: 0 }, DAY);
    expect(ledgerView(l, DAY).overruns).toBe(1);
    expect(scope(l, 'tenant').used.input + scope(l, 'tenant').used.output).toBe(900);
    expect(reserve(l, req('c2', 101), DAY)).toMatchObject({ ok: false, over: { used: 900, need: 101 } });
  });

  it('a call that failed unbilled releases its hold; a run that ended releases what its killed calls held', () => {
    const l = emptyLedger('acme');
    reserve(l, req('c1', 100), DAY);
    release(l, 'c1');
    expect(ledgerView(l, DAY).open).toBe(0);
    reserve(l, req('c2', 100), DAY);
    reserve(l, req('c3', 100, 0, { runId: 'other' }), DAY);
    expect(releaseRun(l, 'r1')).toBe(1);
    expect(Object.keys(l.open)).toEqual(['c3']);
  });

  it('a settle without a reservation (its hold released by the run end) still counts', () => {
    const l = emptyLedger('acme');
    settle(l, { key: 'gone', runId: 'r1', repo: '/repo', message: 'm', usage: usage(5, 5), usd: 0 }, DAY);
    expect(scope(l, 'repo:/repo').used.input).toBe(5);
  });

  it('keeps a bounded number of message ids', () => {
    const l = emptyLedger('acme');
    for (let i = 0; i < MAX_BILLED_IDS + 10; i++) settle(l, { key: `k${i}`, runId: 'r', repo: '/r', message: `m${i}`, usage: usage(1, 0), usd: 0 }, DAY);
    expect(l.billed).toHaveLength(MAX_BILLED_IDS);
    expect(scope(l, 'tenant').used.input).toBe(MAX_BILLED_IDS + 10);
  });
});

describe('limit changes', () => {
  it('refuses malformed ones with a line that says what to fix', () => {
    expect(limitChangeProblem({ scope: 'repo', limit: { usd: 1 }, by: 'op' })).toBe('a repo limit names its repo');
    expect(limitChangeProblem({ scope: 'tenant', limit: { usd: -1 }, by: 'op' })).toBe('limit.usd must be a number ≥ 0');
    expect(limitChangeProblem({ scope: 'tenant', limit: {}, by: 'op' })).toMatch(/needs tokens or usd/);
    expect(limitChangeProblem({ scope: 'galaxy' as never, limit: null, by: 'op' })).toMatch(/scope must be/);
    expect(limitChangeProblem({ scope: 'tenant', limit: { usd: 5 }, by: 'op' })).toBeUndefined();
  });
});

describe('lease', () => {
  const grant = (n: number, tokens: number, spare?: number) => ({
    key: 'L',
    runId: 'r1',
    repo: '/repo',
    grant: n,
    tokens,
    usd: 0,
    ...(spare ? { spare: { tokens: spare, usd: 0 } } : {}),
  });

  it('a grant asked again adds nothing; one that would leave less than its spare room is refused, the same without spare fits', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'tenant', limit: { tokens: 1000 }, by: 'op' });
    expect(lease(l, grant(1, 400), DAY)).toEqual({ ok: true });
    expect(lease(l, grant(1, 400), DAY)).toEqual({ ok: true });
    expect(scope(l, 'tenant').held).toEqual({ tokens: 400, usd: 0, calls: 1 });
    expect(lease(l, grant(2, 300, 400), DAY)).toMatchObject({ ok: false, over: { scope: 'tenant', held: 400 } });
    expect(lease(l, grant(2, 300), DAY)).toEqual({ ok: true });
    expect(scope(l, 'tenant').held.tokens).toBe(700);
  });

  it("a leased reply frees its call's worst case from the lease once, and whatever it cost beyond it; the lease goes when released", () => {
    const l = emptyLedger('acme');
    expect(lease(l, grant(1, 1000), DAY).ok).toBe(true);
    const s = { key: 'c1', runId: 'r1', repo: '/repo', message: 'm1', usage: usage(100, 50), usd: 0, lease: { key: 'L', frees: { tokens: 300, usd: 0 } } };
    expect(settle(l, s, DAY)).toEqual({ counted: true });
    expect(settle(l, s, DAY)).toEqual({ counted: false });
    expect(scope(l, 'tenant')).toMatchObject({ used: { input: 100, output: 50 }, held: { tokens: 700, calls: 1 } });
    // an overrun: 500 billed against a worst case of 300 leaves the lease 500 less
    expect(settle(l, { ...s, message: 'm2', usage: usage(400, 100) }, DAY)).toEqual({ counted: true });
    expect(scope(l, 'tenant').held.tokens).toBe(200);
    expect(l.overruns).toBe(1);
    release(l, 'L');
    expect(scope(l, 'tenant').held.calls).toBe(0);
    // a reply settled after its lease went still counts
    expect(settle(l, { ...s, message: 'm3' }, DAY)).toEqual({ counted: true });
    expect(scope(l, 'tenant').used.input).toBe(600);
  });
});
