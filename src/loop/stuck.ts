/**
 * Stuck detection: an attempt that repeats itself ends early instead of burning budget. Pure,
 * so the thresholds are tested without a server; both sides of the turn loop (./turn.ts) feed
 * it every call and turn.
 */
import type { StuckState } from '../shared/contracts.js';

export type { StuckState };

export const STUCK_LIMITS = {
  /** the same call with the same result, back to back */
  sameCall: 3,
  /** the same error text, back to back */
  sameError: 3,
  /** turns where the model talks without acting */
  idleTurns: 3,
  /** malformed calls (unknown tool, input that fails the schema) in a row */
  malformed: 3,
  /** the longest cycle looked for: A B A B … up to A B C D A B C D … */
  cyclePeriod: 4,
  /** how many times a cycle must repeat back to back (A B A B A B is period 2 three times) */
  cycleRepeats: 3,
} as const;

export function freshStuck(): StuckState {
  return { sameCallStreak: 0, errorStreak: 0, idleTurns: 0, malformedStreak: 0 };
}

export interface CallObservation {
  fingerprint: string;
  /** bounded result text: the same call must also give the same result to count */
  result: string;
  isError: boolean;
  malformed: boolean;
}

/**
 * The shortest period p ≤ cyclePeriod such that the last p × cycleRepeats calls are one block of p
 * calls repeated; 0 when there is none. Period 1 is the plain repeat, left to sameCall.
 */
export function cyclePeriod(recent: readonly string[]): number {
  for (let p = 2; p <= STUCK_LIMITS.cyclePeriod; p++) {
    const n = p * STUCK_LIMITS.cycleRepeats;
    if (recent.length < n) break;
    const tail = recent.slice(-n);
    // a block of one repeated call is period 1, not a cycle of p
    if (new Set(tail.slice(0, p)).size < 2) continue;
    if (tail.every((k, i) => k === tail[i % p])) return p;
  }
  return 0;
}

/**
 * Returns why the attempt is stuck, or undefined. Mutates the state. With `cycles`, a loop of
 * up to four calls that repeats (the same calls with the same results) counts too.
 */
export function observeCall(s: StuckState, c: CallObservation, opts: { cycles?: boolean } = {}): string | undefined {
  s.idleTurns = 0;
  const key = `${c.fingerprint}\0${c.result}`;
  s.sameCallStreak = s.lastCall === key ? s.sameCallStreak + 1 : 1;
  s.lastCall = key;
  if (c.malformed) s.malformedStreak += 1;
  else s.malformedStreak = 0;
  if (c.isError) {
    s.errorStreak = s.lastError === c.result ? s.errorStreak + 1 : 1;
    s.lastError = c.result;
  } else {
    s.errorStreak = 0;
    s.lastError = undefined;
  }
  if (s.malformedStreak >= STUCK_LIMITS.malformed) return `${s.malformedStreak} malformed tool calls in a row`;
  if (s.sameCallStreak >= STUCK_LIMITS.sameCall) return `the same call with the same result ${s.sameCallStreak} times in a row`;
  if (s.errorStreak >= STUCK_LIMITS.sameError) return `the same error ${s.errorStreak} times in a row: ${c.result.slice(0, 120)}`;
  if (opts.cycles) {
    // keys are hashed small: the list is carried in workflow state across continue-as-new
    s.recent = [...(s.recent ?? []), shortKey(key)].slice(-STUCK_LIMITS.cyclePeriod * STUCK_LIMITS.cycleRepeats);
    const p = cyclePeriod(s.recent);
    if (p) return `a cycle of ${p} calls repeated ${STUCK_LIMITS.cycleRepeats} times with the same results`;
  }
  return undefined;
}

/** FNV-1a: deterministic and dependency-free, so it may run in workflow code. */
function shortKey(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `${h.toString(36)}:${text.length}`;
}

/** A turn with no tool call that did not end the attempt. */
export function observeIdleTurn(s: StuckState): string | undefined {
  s.idleTurns += 1;
  if (s.idleTurns >= STUCK_LIMITS.idleTurns) return `${s.idleTurns} turns of talk without acting`;
  return undefined;
}
