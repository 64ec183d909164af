import type { Usage } from '../shared/types.js';
import { DEFAULT_MODEL, SCRIPTED_MODEL } from './models.js';

/** USD per million tokens. Cache writes are the 5-minute ones (1.25x input), the only TTL Kiln asks for. */
export interface Price {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

interface PriceEntry extends Price {
  /** Haiku 5.5 bills a whole request at a higher band once its prompt passes a threshold */
  longPrompt?: { thresholdTokens: number; price: Price };
}

const standard = (input: number, output: number, readFactor = 0.1): Price => ({
  input,
  output,
  cacheWrite: input * 1.25,
  cacheRead: input * readFactor,
});

/**
 * Anthropic's published list prices (platform.claude.com pricing page, as of Nov 2026).
 * Cache reads are 0.1x input except where Anthropic cut them: 0.05x for Sonnet 5.5 (from
 * 2026-10-07) and Opus 5.5, 0.025x for Fable 5.1 and Mythos 5.1.
 */
const PRICES: Record<string, PriceEntry> = {
  'claude-fable-5-1': standard(10, 50, 0.025),
  'claude-mythos-5-1': standard(10, 50, 0.025),
  'claude-fable-5': standard(10, 50),
  'claude-mythos-5': standard(10, 50),
  'claude-opus-5-5': standard(4, 20, 0.05),
  'claude-opus-5': standard(5, 25),
  'claude-opus-4-8': standard(5, 25),
  'claude-opus-4-7': standard(5, 25),
  'claude-opus-4-6': standard(5, 25),
  'claude-opus-4-5': standard(5, 25),
  'claude-opus-4-1': standard(15, 75),
  'claude-opus-4': standard(15, 75),
  'claude-sonnet-5-5': standard(2, 10, 0.05),
  'claude-sonnet-5': standard(2, 10),
  'claude-sonnet-4-6': standard(3, 15),
  'claude-sonnet-4-5': standard(3, 15),
  'claude-sonnet-4': standard(3, 15),
  'claude-3-7-sonnet': standard(3, 15),
  'claude-haiku-5-5': {
    ...standard(0.1, 0.5),
    longPrompt: { thresholdTokens: 100_000, price: standard(0.5, 2.5) },
  },
  'claude-haiku-4-5': standard(1, 5),
  'claude-3-5-haiku': standard(0.8, 4),
  'claude-3-haiku': standard(0.25, 1.25),
};

/** An id the table does not list is priced as the newest model of its family. */
const FAMILY_FALLBACK: Array<[RegExp, string]> = [
  [/fable|mythos/, 'claude-fable-5-1'],
  [/opus/, 'claude-opus-5-5'],
  [/haiku/, 'claude-haiku-5-5'],
  [/sonnet/, 'claude-sonnet-5-5'],
];

/** Strips what does not change the price: a date suffix, a `[1m]` context tag, a provider prefix. */
function normalise(model: string): string {
  return model
    .toLowerCase()
    .replace(/^.*?(claude-)/, '$1')
    .replace(/\[1m\]$/, '')
    .replace(/[-@]\d{8}(-v\d+(:\d+)?)?$/, '');
}

export function priceFor(model: string): { model: string; price: PriceEntry; listed: boolean } {
  // Scripted runs have no real price; they are priced as the default model so that
  // budgets and benchmarks show what the same tokens would cost for real.
  const id = normalise(model === SCRIPTED_MODEL ? DEFAULT_MODEL : model);
  const listed = PRICES[id];
  if (listed) return { model: id, price: listed, listed: true };
  const family = FAMILY_FALLBACK.find(([pattern]) => pattern.test(id))?.[1] ?? DEFAULT_MODEL;
  return { model: family, price: PRICES[family] ?? standard(2, 10), listed: false };
}

/** The cost of one response in USD. */
export function costUsd(model: string, usage: Usage): number {
  const { price: entry } = priceFor(model);
  const prompt = usage.input + usage.cacheRead + usage.cacheWrite;
  const price = entry.longPrompt && prompt > entry.longPrompt.thresholdTokens ? entry.longPrompt.price : entry;
  const micro = usage.input * price.input + usage.output * price.output + usage.cacheWrite * price.cacheWrite + usage.cacheRead * price.cacheRead;
  return micro / 1_000_000;
}
