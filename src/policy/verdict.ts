import type { Decision, PolicyContext } from './types.js';

/** One judgement before it becomes a PolicyDecision. */
export interface Verdict {
  decision: Decision;
  rule: string;
  reason: string;
  /** run_command: re-running it after a crash cannot do harm */
  safe?: boolean;
  grantKey?: string;
}

const SEVERITY: Record<Decision, number> = { allow: 0, ask: 1, deny: 2 };

/** The most severe verdict; the first one wins a tie, so the earliest reason is shown. */
export function mostSevere<T extends Verdict>(vs: readonly T[]): T | undefined {
  let worst: T | undefined;
  for (const v of vs) if (!worst || SEVERITY[v.decision] > SEVERITY[worst.decision]) worst = v;
  return worst;
}

export const allow = (rule: string, reason: string, safe = false): Verdict => ({ decision: 'allow', rule, reason, safe });
export const deny = (rule: string, reason: string): Verdict => ({ decision: 'deny', rule, reason });
export const ask = (rule: string, reason: string, grantKey?: string): Verdict => ({
  decision: 'ask',
  rule,
  reason,
  ...(grantKey ? { grantKey } : {}),
});

/** In auto mode nobody is there to ask: the call is refused, under the same rule. */
export function applyMode<T extends Verdict>(v: T, ctx: Pick<PolicyContext, 'mode'>): T {
  if (v.decision !== 'ask' || ctx.mode !== 'auto') return v;
  const { grantKey: _g, ...rest } = v;
  return { ...rest, decision: 'deny', reason: `auto mode: would ask: ${v.reason}` } as T;
}
