/**
 * The run's budgets as the turn loop counts them (./turn.ts): the workflow's count and the turn
 * activity's copy of it are the same sums, so both stop at the same turn.
 */
import type { BudgetUsed, Budgets, Usage } from '../shared/types.js';

/** One turn's worth of the budget. */
export function addTurn(b: BudgetUsed, usage: Usage, costUsd: number): void {
  b.turns += 1;
  addSpend(b, usage, costUsd);
}

/** A model call that is not a turn (the independent review): its tokens and cost count, its turn does not. */
export function addSpend(b: BudgetUsed, usage: Usage, costUsd: number): void {
  b.input += usage.input;
  b.output += usage.output;
  b.cacheRead += usage.cacheRead;
  b.cacheWrite += usage.cacheWrite;
  b.costUsd = Math.round((b.costUsd + costUsd) * 1e6) / 1e6;
}

export function totalTokens(b: BudgetUsed): number {
  return b.input + b.output + b.cacheRead + b.cacheWrite;
}

/** The first budget that is used up, named as the user set it, or undefined. */
export function budgetExceeded(b: BudgetUsed, limits: Budgets): string | undefined {
  if (b.turns >= limits.maxTurns) return `maxTurns (${limits.maxTurns})`;
  if (totalTokens(b) >= limits.maxTokens) return `maxTokens (${limits.maxTokens})`;
  if (b.costUsd >= limits.maxUsd) return `maxUsd (${limits.maxUsd})`;
  if (b.wallMs >= limits.maxWallMs) return `maxWallMs (${limits.maxWallMs})`;
  return undefined;
}

/** The largest share of any budget used so far (1 = a budget is used up). */
export function budgetShare(b: BudgetUsed, limits: Budgets): number {
  return Math.max(b.turns / limits.maxTurns, totalTokens(b) / limits.maxTokens, b.costUsd / limits.maxUsd, b.wallMs / limits.maxWallMs);
}
