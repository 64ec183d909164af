/**
 * audit.jsonl as a hash chain: each line carries `seq` (its 1-based place) and `prev`, the sha256
 * of the line before it as written (the first line: of a genesis text naming the run). An edited
 * line no longer hashes to what the next line recorded; a removed or moved line is out of its
 * place. This makes edits evident to `kiln audit verify`, not impossible: whoever rewrites the
 * whole file from the edit on can recompute the chain, and an edit of the last line shows only
 * against a copy of its hash kept elsewhere.
 */
import { createHash } from 'node:crypto';

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** What the first line's `prev` is: fixed, and bound to the run, so lines from another run's audit do not chain. */
export function auditGenesis(runId: string): string {
  return sha256Hex(`kiln audit.jsonl genesis for run ${runId}`);
}

/** The last complete line of a JSON-lines text (the chain's head), or undefined when it has none. */
export function lastLine(text: string): { line: string; count: number } | undefined {
  const lines = text.split('\n').filter((l) => l.length > 0);
  return lines.length ? { line: lines[lines.length - 1]!, count: lines.length } : undefined;
}

export type ChainCheck = { ok: true; entries: number } | { ok: false; line: number; problem: string };

/** Recomputes the chain of an audit.jsonl text; names the first line that does not hold. */
export function verifyAuditChain(text: string, runId: string): ChainCheck {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  let prev = auditGenesis(runId);
  for (const [i, line] of lines.entries()) {
    const n = i + 1;
    let entry: { prev?: unknown; seq?: unknown; runId?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return { ok: false, line: n, problem: 'is not a JSON line (edited or cut)' };
    }
    if (entry.seq === undefined && entry.prev === undefined)
      return { ok: false, line: n, problem: 'carries no hash chain (no seq, no prev): written before audit lines were chained, or forged without one' };
    if (entry.runId !== runId) return { ok: false, line: n, problem: `names run ${JSON.stringify(entry.runId)}, not ${runId}` };
    if (entry.seq !== n) return { ok: false, line: n, problem: `is entry ${String(entry.seq)} in place of entry ${n}: lines were removed, added or reordered` };
    if (entry.prev !== prev)
      return {
        ok: false,
        line: n - 1 || 1,
        problem:
          n === 1
            ? 'does not start the chain: its prev is not the genesis value of this run'
            : `was changed after it was written: line ${n} recorded another hash for it`,
      };
    prev = sha256Hex(line);
  }
  return { ok: true, entries: lines.length };
}
