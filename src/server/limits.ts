/**
 * Limits a tenant's token meets before anything reaches Temporal: requests per minute per token
 * (a token bucket), and at start the tenant's concurrent runs and its spend today (UTC).
 */
import type { TenantConfig } from './tenants.js';

/** A 429 with when to try again; the JSON says why and when the limit resets. */
export class LimitError extends Error {
  constructor(
    message: string,
    readonly limit: 'rate' | 'concurrent_runs' | 'usd_per_day',
    readonly retryAfterS: number,
    readonly resetsAt?: string,
  ) {
    super(message);
  }
}

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  /** Takes one request from the token's bucket of `perMinute`, refilled evenly. */
  take(tokenId: string, perMinute: number): void {
    const t = this.now();
    const b = this.buckets.get(tokenId) ?? { tokens: perMinute, at: t };
    b.tokens = Math.min(perMinute, b.tokens + ((t - b.at) / 60_000) * perMinute);
    b.at = t;
    this.buckets.set(tokenId, b);
    if (b.tokens < 1) {
      const waitS = Math.ceil(((1 - b.tokens) / perMinute) * 60);
      throw new LimitError(`rate limit: at most ${perMinute} requests a minute per token; try again in ${waitS} s`, 'rate', waitS);
    }
    b.tokens -= 1;
  }
}

function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function utcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/** A run of today as the start check counts it: an open run reserves its whole --max-usd. */
export interface DayRun {
  open: boolean;
  maxUsd: number;
  costUsd?: number;
}

export function checkStart(t: TenantConfig, o: { tenant: string; openRuns: number; today: DayRun[]; newMaxUsd: number; now: Date }): void {
  if (o.openRuns >= t.maxConcurrentRuns) {
    throw new LimitError(
      `tenant ${o.tenant} has ${o.openRuns} runs going, its limit is ${t.maxConcurrentRuns}: start again when one ends`,
      'concurrent_runs',
      30,
    );
  }
  const spent = o.today.reduce((s, r) => s + (r.open ? r.maxUsd : (r.costUsd ?? 0)), 0);
  if (spent + o.newMaxUsd > t.usdPerDay) {
    const reset = nextUtcMidnight(o.now);
    throw new LimitError(
      `tenant ${o.tenant}: today's runs cost or reserve $${spent.toFixed(2)}; this run may cost up to $${o.newMaxUsd.toFixed(2)} and the day's budget is $${t.usdPerDay.toFixed(2)} (it resets ${reset.toISOString()}; a smaller maxUsd may fit)`,
      'usd_per_day',
      Math.max(1, Math.ceil((reset.getTime() - o.now.getTime()) / 1000)),
      reset.toISOString(),
    );
  }
}
