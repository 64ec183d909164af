/**
 * audit.jsonl as a hash chain: each line carries `seq` (its 1-based place) and `prev`, the sha256
 * of the line before it as written (the first line: of a genesis text naming the run). An edited
 * line no longer hashes to what the next line recorded; a removed or moved line is out of its
 * place. This makes edits evident to `kiln audit verify`, not impossible: whoever rewrites the
 * whole file from the edit on can recompute the chain. The end of the chain is anchored outside
 * the file: each write returns the new head (AuditHead), the workflow keeps it in its state and
 * history, and verify compares the file's last line with it (compareAuditHead), so a cut, an
 * edited last line or an appended line shows too.
 */
import { createHash } from 'node:crypto';

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * What the first line's `prev` is: fixed, and bound to the run and its execution (the first
 * execution's Temporal run id), so lines from another run's audit, or from an earlier execution
 * under the same id, do not chain. Audits written before lines named their execution have none.
 */
export function auditGenesis(runId: string, execution?: string): string {
  return sha256Hex(execution ? `kiln audit.jsonl genesis for run ${runId} execution ${execution}` : `kiln audit.jsonl genesis for run ${runId}`);
}

/** The last complete line of a JSON-lines text (the chain's head), or undefined when it has none. */
export function lastLine(text: string): { line: string; count: number } | undefined {
  const lines = text.split('\n').filter((l) => l.length > 0);
  return lines.length ? { line: lines[lines.length - 1]!, count: lines.length } : undefined;
}

export type ChainCheck = { ok: true; entries: number; execution?: string } | { ok: false; line: number; problem: string };

/** The execution an audit.jsonl text says it belongs to: its first line's, if that line names one. */
export function auditExecution(text: string): string | undefined {
  const first = text.slice(0, text.indexOf('\n') + 1 || undefined);
  try {
    const e = (JSON.parse(first) as { execution?: unknown }).execution;
    return typeof e === 'string' ? e : undefined;
  } catch {
    return undefined;
  }
}

/** Recomputes the chain of an audit.jsonl text; names the first line that does not hold. */
export function verifyAuditChain(text: string, runId: string): ChainCheck {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const execution = auditExecution(text);
  let prev = auditGenesis(runId, execution);
  for (const [i, line] of lines.entries()) {
    const n = i + 1;
    let entry: { prev?: unknown; seq?: unknown; runId?: unknown; execution?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return { ok: false, line: n, problem: 'is not a JSON line (edited or cut)' };
    }
    if (entry.seq === undefined && entry.prev === undefined)
      return { ok: false, line: n, problem: 'carries no hash chain (no seq, no prev): written before audit lines were chained, or forged without one' };
    if (entry.runId !== runId) return { ok: false, line: n, problem: `names run ${JSON.stringify(entry.runId)}, not ${runId}` };
    if (entry.execution !== execution)
      return {
        ok: false,
        line: n,
        problem: `names execution ${JSON.stringify(entry.execution ?? null)}, not ${JSON.stringify(execution ?? null)} as line 1 does`,
      };
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
  return { ok: true, entries: lines.length, ...(execution ? { execution } : {}) };
}

/** The chain's end as the run recorded it: the last line's place and sha256. */
export interface AuditHead {
  seq: number;
  hash: string;
}

/** The head of an audit.jsonl text, or undefined when it has no line. */
export function auditHeadOf(text: string): AuditHead | undefined {
  const last = lastLine(text);
  return last ? { seq: last.count, hash: sha256Hex(last.line) } : undefined;
}

export type HeadCheck = { ok: true } | { ok: false; problem: string };

/** Whether the file ends where the run's record says it does: catches a cut, an edited last line, an appended line. */
export function compareAuditHead(text: string, recorded: AuditHead): HeadCheck {
  const head = auditHeadOf(text);
  const entries = head?.seq ?? 0;
  if (entries < recorded.seq) return { ok: false, problem: `has ${entries} entries, the run recorded ${recorded.seq}: lines were removed from the end` };
  if (entries > recorded.seq)
    return {
      ok: false,
      problem: `has ${entries} entries, the run recorded ${recorded.seq}: ${entries - recorded.seq === 1 ? `line ${entries} was` : `lines ${recorded.seq + 1}-${entries} were`} added after the run wrote its last one`,
    };
  if (head!.hash !== recorded.hash)
    return { ok: false, problem: `line ${entries} (the last) was changed after it was written: its hash is not the one the run recorded` };
  return { ok: true };
}
