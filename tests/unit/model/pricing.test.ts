import { describe, expect, it } from 'vitest';
import { costUsd, DEFAULT_MODEL, priceFor } from '../../../src/model/index.js';

const M = 1_000_000;

describe('costUsd', () => {
  it('prices each kind of token from the table', () => {
    // Sonnet 4.6: $3 input, $15 output, $3.75 cache write, $0.30 cache read per MTok
    expect(costUsd('claude-sonnet-4-6', { input: M, output: 0, cacheRead: 0, cacheWrite: 0 })).toBeCloseTo(3);
    expect(costUsd('claude-sonnet-4-6', { input: 0, output: M, cacheRead: 0, cacheWrite: 0 })).toBeCloseTo(15);
    expect(costUsd('claude-sonnet-4-6', { input: 0, output: 0, cacheRead: 0, cacheWrite: M })).toBeCloseTo(3.75);
    expect(costUsd('claude-sonnet-4-6', { input: 0, output: 0, cacheRead: M, cacheWrite: 0 })).toBeCloseTo(0.3);
    expect(costUsd('claude-opus-4-5-20251101', { input: 10_000, output: 2_000, cacheRead: 100_000, cacheWrite: 5_000 })).toBeCloseTo(
      (10_000 * 5 + 2_000 * 25 + 100_000 * 0.5 + 5_000 * 6.25) / M,
    );
  });

  it('prices the default Sonnet and scripted runs alike', () => {
    const usage = { input: 1_000, output: 500, cacheRead: 20_000, cacheWrite: 3_000 };
    // Sonnet 5.5: $2 / $10, cache write $2.50, cache read $0.10
    expect(costUsd(DEFAULT_MODEL, usage)).toBeCloseTo((1_000 * 2 + 500 * 10 + 20_000 * 0.1 + 3_000 * 2.5) / M);
    expect(costUsd('scripted', usage)).toBe(costUsd(DEFAULT_MODEL, usage));
  });

  it('charges Haiku 5.5 its long-prompt band past 100k prompt tokens', () => {
    const short = costUsd('claude-haiku-5-5', { input: 100_000, output: 0, cacheRead: 0, cacheWrite: 0 });
    const long = costUsd('claude-haiku-5-5', { input: 100_001, output: 0, cacheRead: 0, cacheWrite: 0 });
    expect(short).toBeCloseTo(0.01);
    expect(long).toBeCloseTo(0.05, 4);
  });

  it('prices an unlisted id as the newest of its family', () => {
    expect(priceFor('claude-opus-9').listed).toBe(false);
    expect(priceFor('claude-opus-9').model).toBe('claude-opus-5-5');
    expect(priceFor('us.anthropic.claude-sonnet-4-5-20250929-v1:0')).toMatchObject({ model: 'claude-sonnet-4-5', listed: true });
    expect(priceFor('claude-sonnet-5-5[1m]').listed).toBe(true);
  });
});
