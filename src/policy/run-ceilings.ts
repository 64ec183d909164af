/**
 * The most a run may ask of this worker. The client's flags choose a run's budgets and timeouts,
 * but anyone who reaches Temporal can start a `kilnRun` with `maxUsd: 1e9`: the worker's operator
 * owns the ceiling, and a request above it is refused with the field named, not quietly lowered
 * (a run that silently got less than it asked for would fail later and further from the cause).
 */
import type { RunInput } from '../shared/types.js';
import { UsageError } from '../shared/errors.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Each bounded field, as the refusal names it, and how to read it from a request. */
const FIELDS = {
  'budgets.maxTurns': (r: RunInput) => r.budgets.maxTurns,
  'budgets.maxTokens': (r: RunInput) => r.budgets.maxTokens,
  'budgets.maxUsd': (r: RunInput) => r.budgets.maxUsd,
  'budgets.maxWallMs': (r: RunInput) => r.budgets.maxWallMs,
  maxTokens: (r: RunInput) => r.maxTokens,
  commandTimeoutMs: (r: RunInput) => r.commandTimeoutMs,
  approvalTimeoutMs: (r: RunInput) => r.approvalTimeoutMs,
  humanTimeoutMs: (r: RunInput) => r.humanTimeoutMs,
  heartbeatTimeoutMs: (r: RunInput) => r.heartbeatTimeoutMs,
  hostLossTimeoutMs: (r: RunInput) => r.hostLossTimeoutMs,
  contextTokens: (r: RunInput) => r.contextTokens,
  turnsPerRun: (r: RunInput) => r.turnsPerRun,
} satisfies Record<string, (r: RunInput) => number | undefined>;

export type RunCeilings = Record<keyof typeof FIELDS, number>;

/**
 * Well above the client's defaults (60 turns, $10, 2 h, 10 min a command, a day for an approval):
 * a person may raise a run's budget several times over without asking the operator.
 */
export const DEFAULT_RUN_CEILINGS: RunCeilings = {
  'budgets.maxTurns': 1_000,
  'budgets.maxTokens': 100_000_000,
  'budgets.maxUsd': 500,
  'budgets.maxWallMs': 2 * DAY,
  maxTokens: 200_000,
  commandTimeoutMs: 2 * HOUR,
  approvalTimeoutMs: 30 * DAY,
  humanTimeoutMs: 90 * DAY,
  heartbeatTimeoutMs: 10 * 60_000,
  hostLossTimeoutMs: 7 * DAY,
  contextTokens: 2_000_000,
  turnsPerRun: 1_000,
};

const isField = (k: string): k is keyof RunCeilings => Object.hasOwn(FIELDS, k);

/**
 * KILN_RUN_CEILINGS (`kiln worker --run-ceilings`): `field=value` pairs separated by commas,
 * e.g. `budgets.maxUsd=50,commandTimeoutMs=1800000`; fields left out keep their default.
 * A misspelt field or a value that is not a positive number stops the worker at start.
 */
export function runCeilingsFrom(spec: string | undefined, source = 'KILN_RUN_CEILINGS'): RunCeilings {
  const out = { ...DEFAULT_RUN_CEILINGS };
  for (const pair of (spec ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const m = /^\s*([\w.]+)\s*=\s*(\S+)\s*$/.exec(pair);
    if (!m) throw new UsageError(`${source}: "${pair.trim()}" is not field=value`);
    const [, field, raw] = m;
    if (!isField(field!)) throw new UsageError(`${source}: unknown field ${field}; one of ${Object.keys(FIELDS).join(', ')}`);
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${source}: ${field} must be a positive number, got "${raw}"`);
    out[field] = n;
  }
  return out;
}

/** Every field of `r` above its ceiling, as `field VALUE is above this worker's ceiling CEILING`. */
export function overCeilings(r: RunInput, ceilings: RunCeilings): string[] {
  const over: string[] = [];
  for (const [field, read] of Object.entries(FIELDS) as [keyof RunCeilings, (r: RunInput) => number | undefined][]) {
    const value = read(r);
    if (value !== undefined && value > ceilings[field]) over.push(`${field} ${value} is above this worker's ceiling ${ceilings[field]}`);
  }
  return over;
}
