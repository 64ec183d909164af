/** The run's cost ledger (model-calls.jsonl) as tests read it, and what the fault server says it served. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedRequest } from '../../src/model/fault-server.js';
import type { RunResult } from '../../src/shared/types.js';

export const ledger = (r: RunResult) =>
  readFileSync(join(r.artifactsDir, 'model-calls.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** What the ledger says the run was billed: every line's usage, a reply (message id) once. */
export function ledgerTotal(r: RunResult): { input: number; output: number } {
  const seen = new Set<unknown>();
  const total = { input: 0, output: 0 };
  for (const l of ledger(r)) {
    const usage = l.usage as { input: number; output: number } | undefined;
    if (!usage || (l.message !== undefined && seen.has(l.message))) continue;
    seen.add(l.message);
    total.input += usage.input;
    total.output += usage.output;
  }
  return total;
}

/** What the fault server told the client these requests cost. */
export function servedTotal(reqs: RecordedRequest[]): { input: number; output: number } {
  return reqs.reduce((a, q) => ({ input: a.input + (q.served?.input ?? 0), output: a.output + (q.served?.output ?? 0) }), { input: 0, output: 0 });
}
