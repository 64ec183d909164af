/**
 * A run's events as Server-Sent Events: its log lines (id = the line's seq, so a client that
 * reconnects with Last-Event-ID gets only what it missed), its state when that changes, and an
 * `end` event with the outcome. Lines older than the state's window come from events.jsonl.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactsDir } from '../shared/paths.js';
import type { LogLine, RunState } from '../shared/types.js';
import type { ListQuery, RunBackend, RunInfo } from './backend.js';

/** What the inbox redraws from: the state without its log (the log comes as its own events). */
function brief(st: RunState) {
  return {
    runId: st.runId,
    phase: st.phase,
    scripted: st.scripted,
    attempt: st.attempt,
    turn: st.turn,
    plan: st.plan,
    pendingApprovals: st.pendingApprovals,
    reason: st.reason ?? null,
    costUsd: st.budget.costUsd,
  };
}

async function loggedSince(repo: string, runId: string, after: number, before: number): Promise<LogLine[]> {
  const text = await readFile(join(artifactsDir(repo, runId), 'events.jsonl'), 'utf8').catch(() => '');
  const out: LogLine[] = [];
  for (const raw of text.split('\n')) {
    try {
      const e = JSON.parse(raw) as { seq?: number; at?: string; type?: string; text?: string };
      if (typeof e.seq === 'number' && typeof e.text === 'string' && e.seq > after && e.seq < before)
        out.push({ seq: e.seq, at: e.at ?? '', kind: e.type as LogLine['kind'], text: e.text });
    } catch {
      /* a line being written */
    }
  }
  return out;
}

export function runEvents(c: Context, backend: RunBackend, run: RunInfo, lastEventId: number, pollMs: number): Response {
  return streamSSE(c, async (stream) => {
    let last = lastEventId;
    let lastBrief = '';
    let aborted = false;
    stream.onAbort(() => {
      aborted = true;
    });
    let backfilled = false;
    let saidWaiting = false;
    while (!aborted) {
      const st = await backend.state(run.runId);
      if (st) {
        const fresh = st.log.filter((l) => l.seq > last);
        if (!backfilled && fresh.length && fresh[0]!.seq > last + 1) fresh.unshift(...(await loggedSince(st.repo, run.runId, last, fresh[0]!.seq)));
        backfilled = true;
        for (const l of fresh) {
          await stream.writeSSE({ event: 'log', id: String(l.seq), data: JSON.stringify(l) });
          last = l.seq;
        }
        const b = JSON.stringify(brief(st));
        if (b !== lastBrief) {
          await stream.writeSSE({ event: 'state', data: b });
          lastBrief = b;
        }
      }
      const now = await backend.describe(run.runId);
      if (!now?.open) {
        const result = await backend.result(run.runId);
        await stream.writeSSE({ event: 'end', data: JSON.stringify({ status: now?.status ?? 'unknown', result: result ?? null }) });
        return;
      }
      if (!st && !saidWaiting) {
        saidWaiting = true;
        await stream.writeSSE({ event: 'waiting', data: JSON.stringify({ message: 'no worker answers: the run waits until one starts' }) });
      }
      await stream.sleep(pollMs);
    }
  });
}

/**
 * A tenant's runs as one stream: a `runs` event (each open run's id, status and phase) whenever
 * that list changes, so the inbox sees a run that has just started to wait without a refresh,
 * then follows it on its own stream. Only the tenant's runs: the query carries the tenant.
 */
export function tenantEvents(c: Context, backend: RunBackend, query: ListQuery, pollMs: number): Response {
  return streamSSE(c, async (stream) => {
    let aborted = false;
    stream.onAbort(() => {
      aborted = true;
    });
    let last = '';
    while (!aborted) {
      const runs = (await backend.list(query)).filter((r) => r.open).map((r) => ({ runId: r.runId, status: r.status, phase: r.phase ?? null }));
      const now = JSON.stringify(runs);
      if (now !== last) {
        await stream.writeSSE({ event: 'runs', data: now });
        last = now;
      }
      await stream.sleep(pollMs);
    }
  });
}
