/** `kiln budget set`'s flags as one limit change, and `kiln budget show`'s text. */
import { describe, expect, it } from 'vitest';
import { limitChangeOf } from '../../../src/cli/actions/budget.js';
import { formatBudget } from '../../../src/client/budget.js';
import { emptyLedger, ledgerView, reserve, setLimit, settle } from '../../../src/shared/budget-ledger.js';

describe('kiln budget set', () => {
  it('reads one scope and one limit', () => {
    expect(limitChangeOf({ tenant: 'acme', day: true, usd: '20', by: 'op' })).toEqual({ scope: 'day', limit: { usd: 20, tokens: undefined }, by: 'op' });
    expect(limitChangeOf({ tenant: 'acme', parent: 'run-1', tokens: '900', by: 'op' })).toMatchObject({
      scope: 'parent',
      name: 'run-1',
      limit: { tokens: 900 },
    });
    expect(limitChangeOf({ tenant: 'acme', tenantWide: true, remove: true, by: 'op' })).toEqual({ scope: 'tenant', limit: null, by: 'op' });
  });

  it('refuses what it cannot read, in one line', () => {
    expect(() => limitChangeOf({ tenant: 'acme', usd: '1' })).toThrow(/name exactly one scope/);
    expect(() => limitChangeOf({ tenant: 'acme', day: true, repo: '.', usd: '1' })).toThrow(/name exactly one scope/);
    expect(() => limitChangeOf({ tenant: 'acme', day: true, usd: 'lots' })).toThrow('--usd lots: expected a number ≥ 0');
    expect(() => limitChangeOf({ tenant: 'acme', day: true, tokens: '-5' })).toThrow('--tokens -5: expected a number ≥ 0');
    expect(() => limitChangeOf({ tenant: 'acme', day: true })).toThrow(/give --tokens N, --usd N, or --remove/);
    expect(() => limitChangeOf({ tenant: 'acme', day: true, remove: true, usd: '2' })).toThrow(/--remove takes no/);
  });
});

describe('kiln budget show', () => {
  it('a line a scope: billed, held by calls in flight, and the limit', () => {
    const l = emptyLedger('acme');
    setLimit(l, { scope: 'tenant', limit: { usd: 5 }, by: 'op' });
    reserve(l, { key: 'k1', runId: 'r', repo: '/repo', tokens: 5000, usd: 0.02 }, '2026-12-07');
    settle(
      l,
      { key: 'k1', runId: 'r', repo: '/repo', message: 'm1', usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 }, usd: 0.0006 },
      '2026-12-07',
    );
    reserve(l, { key: 'k2', runId: 'r', repo: '/repo', tokens: 5000, usd: 0.02 }, '2026-12-07');
    const text = formatBudget(ledgerView(l, '2026-12-07'), 'acme');
    expect(text).toContain('tenant acme (day 2026-12-07 UTC): 1 call in flight');
    expect(text).toContain(
      '  tenant: billed 120 tokens (input 100, output 20, cache read 0, cache write 0) $0.000600; held 5000 tokens $0.020000 by 1 call; limit: $5.000000',
    );
    expect(text).toMatch(/repo:\/repo: .*limit: no limit/);
    expect(formatBudget(undefined, 'nobody')).toBe('tenant nobody: no model call has reserved and no limit is set');
  });
});
