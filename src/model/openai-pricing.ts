/**
 * OpenAI's price table, kept apart from Anthropic's (pricing.ts): USD per million tokens, cached
 * prompt tokens at OpenAI's cached-input price. Published list prices as of Aug 2025 (openai.com
 * API pricing page); update here when they change.
 */
import type { Usage } from '../shared/types.js';
import type { Price } from './pricing.js';

const p = (input: number, cacheRead: number, output: number): Price => ({ input, output, cacheRead, cacheWrite: input });

const PRICES: Record<string, Price> = {
  'gpt-5': p(1.25, 0.125, 10),
  'gpt-5-mini': p(0.25, 0.025, 2),
  'gpt-5-nano': p(0.05, 0.005, 0.4),
  'gpt-4.1': p(2, 0.5, 8),
  'gpt-4.1-mini': p(0.4, 0.1, 1.6),
  'gpt-4.1-nano': p(0.1, 0.025, 0.4),
  'gpt-4o': p(2.5, 1.25, 10),
  'gpt-4o-mini': p(0.15, 0.075, 0.6),
  o3: p(2, 0.5, 8),
  'o4-mini': p(1.1, 0.275, 4.4),
};

/** An id the table does not list (a newer or dated model) is priced as the longest listed id it starts with, else as gpt-5. */
export function openaiPriceFor(model: string): { model: string; price: Price; listed: boolean } {
  const id = model.toLowerCase().replace(/-\d{4}-\d{2}-\d{2}$/, '');
  if (PRICES[id]) return { model: id, price: PRICES[id], listed: true };
  const prefix = Object.keys(PRICES)
    .filter((k) => id.startsWith(`${k}-`))
    .sort((a, b) => b.length - a.length)[0];
  return { model: prefix ?? 'gpt-5', price: PRICES[prefix ?? 'gpt-5']!, listed: false };
}

/** The cost of one OpenAI response in USD. */
export function openaiCostUsd(model: string, usage: Usage): number {
  const { price } = openaiPriceFor(model);
  return (usage.input * price.input + usage.output * price.output + usage.cacheRead * price.cacheRead + usage.cacheWrite * price.cacheWrite) / 1_000_000;
}
