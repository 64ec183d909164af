/**
 * Stuck detection: an attempt that repeats itself ends early instead of burning budget. Pure,
 * so the thresholds are tested without a server; the workflow feeds it every call and turn.
 */
export const STUCK_LIMITS = {
  /** the same call with the same result, back to back */
  sameCall: 3,
  /** the same error text, back to back */
  sameError: 3,
  /** turns where the model talks without acting */
  idleTurns: 3,
  /** malformed calls (unknown tool, input that fails the schema) in a row */
  malformed: 3,
} as const;

export interface StuckState {
  lastCall?: string;
  sameCallStreak: number;
  lastError?: string;
  errorStreak: number;
  idleTurns: number;
  malformedStreak: number;
}

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

/** Returns why the attempt is stuck, or undefined. Mutates the state. */
export function observeCall(s: StuckState, c: CallObservation): string | undefined {
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
  return undefined;
}

/** A turn with no tool call that did not end the attempt. */
export function observeIdleTurn(s: StuckState): string | undefined {
  s.idleTurns += 1;
  if (s.idleTurns >= STUCK_LIMITS.idleTurns) return `${s.idleTurns} turns of talk without acting`;
  return undefined;
}
