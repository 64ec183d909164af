/** Plain-text sections of the benchmark report: one heading each, figures aligned for reading. */
import type { BenchSearchResult } from './search.js';
import { HISTORY_BYTE_LIMIT, HISTORY_EVENT_LIMIT, type TimeSplit } from './history.js';
import type { HostFacts } from './host-facts.js';
import type { PolicyRow } from './policy-latency.js';
import type { RedactionRow } from './redaction.js';
import type { LoopFigures, TurnBenchResult } from './turns.js';

export function heading(title: string): string {
  return `\n== ${title} ${'='.repeat(Math.max(3, 76 - title.length))}`;
}

const ms = (x: number) => `${x.toFixed(1)} ms`;
const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;

export function hostSection(h: HostFacts): string[] {
  return [
    heading('Machine'),
    `cores        ${h.cores} (${h.cpu})`,
    `memory       ${h.memGb} GB`,
    `node         ${h.node}`,
    `os           ${h.os}`,
    `load avg     ${h.loadavg.join(' / ')} (1/5/15 min, at start)`,
    `temporal     ${h.temporalCli}`,
    `git          ${h.git}`,
  ];
}

function loopLine(name: string, f: LoopFigures): string {
  return `${name.padEnd(20)} ${ms(f.turnMs.p50).padStart(10)} ${ms(f.turnMs.p95).padStart(10)} ${ms(f.turnMs.mean).padStart(10)} ${ms(f.firstRequestMs).padStart(12)} ${(f.wallMs / 1000).toFixed(2).padStart(8)} s`;
}

export function turnsSection(r: TurnBenchResult): string[] {
  return [
    heading(`Turns: ${r.turns}-turn scripted task, Temporal vs in-process (sandbox ${r.sandbox})`),
    `per turn = model request of turn N → model request of turn N+1 (${r.temporal.turnMs.n} samples each)`,
    `${'run'.padEnd(20)} ${'p50'.padStart(10)} ${'p95'.padStart(10)} ${'mean'.padStart(10)} ${'1st request'.padStart(12)} ${'wall'.padStart(10)}`,
    loopLine('Temporal + worker', r.temporal),
    loopLine('in-process loop', r.inProcess),
    `overhead     p50 ×${r.overhead.p50Ratio} (+${r.overhead.p50AddedMs} ms a turn), p95 ×${r.overhead.p95Ratio}, wall ×${r.overhead.wallRatio}`,
    `ledger       reserve (on the turn's path) p50 ${ms(r.ledger.reserveMs.p50)} p95 ${ms(r.ledger.reserveMs.p95)} over ${r.ledger.reserveMs.n} calls: +${r.ledger.perTurnP50Ms} ms a turn at p50, ${(r.ledger.shareOfTurnP50 * 100).toFixed(1)}% of the turn, against the turn's noise (p95 − p50) of ${r.ledger.turnNoiseMs} ms; settle (beside the turn) p50 ${ms(r.ledger.settleMs.p50)} p95 ${ms(r.ledger.settleMs.p95)}`,
    `setup        dev server start ${(r.temporal.serverStartMs / 1000).toFixed(1)} s, worker start (bundle + connect) ${(r.temporal.workerStartMs / 1000).toFixed(1)} s — not in the figures above`,
  ];
}

export function historySection(r: TurnBenchResult): string[] {
  const h = r.history;
  const top = Object.entries(h.byType)
    .slice(0, 6)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    heading(`History of the ${h.turns}-turn run`),
    `events       ${h.events} in all, ${h.eventsPerTurn} per turn`,
    `size         ${kb(h.bytes)} in all (protobuf-encoded History), ${kb(h.bytesPerTurn)} per turn`,
    `by type      ${top}`,
    `limits       ${HISTORY_EVENT_LIMIT} events → ~${h.turnsToEventLimit} turns;  ${HISTORY_BYTE_LIMIT / 1024 ** 2} MB → ~${h.turnsToByteLimit} turns (Temporal's default hard limits)`,
    `first limit  ${h.turnsToEventLimit <= h.turnsToByteLimit ? 'the event count' : 'the size'}, at ~${Math.min(h.turnsToEventLimit, h.turnsToByteLimit)} turns of this shape`,
    ...timeLines(h.time, h.turns),
  ];
}

/** Per turn, from the server's timestamps: what waits in Temporal and what runs in the worker. */
function timeLines(t: TimeSplit, turns: number): string[] {
  const per = (v: number) => `${(v / turns).toFixed(1)} ms`;
  const acts = Object.entries(t.activityRunMs)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${per(v)}`)
    .join(', ');
  return [
    `time a turn  ${(t.activities / turns).toFixed(1)} activities, ${(t.workflowTasks / turns).toFixed(1)} workflow tasks`,
    `  waiting    activity dispatch ${per(t.activityDispatchMs)}, workflow task dispatch ${per(t.workflowTaskDispatchMs)}`,
    `  running    workflow code ${per(t.workflowTaskRunMs)}; ${acts}`,
  ];
}

export function searchSection(s: BenchSearchResult): string[] {
  const out = [
    heading(`Search: ${s.files} files (${(s.bytes / 1024 ** 2).toFixed(1)} MB), ours vs git grep, median of ${s.runs}`),
    `repository   ${s.dir}${s.setupMs ? ` (generated in ${(s.setupMs / 1000).toFixed(1)} s)` : ' (reused)'}`,
    `${'pattern'.padEnd(18)} ${'ours'.padStart(10)} ${'git grep'.padStart(10)} ${'ratio'.padStart(7)}   matches (git grep lines; ours)`,
  ];
  for (const r of s.rows) {
    out.push(
      `${r.label.padEnd(18)} ${ms(r.oursMs).padStart(10)} ${ms(r.gitGrepMs).padStart(10)} ${r.ratio.toFixed(2).padStart(7)}   ${r.gitGrepLines}; ${r.oursSummary}`,
    );
  }
  out.push('ratio = ours ÷ git grep: below 1 means our search tool is faster');
  return out;
}

export function redactionSection(rows: RedactionRow[]): string[] {
  return [
    heading('Redaction: redact() on mixed text (code, logs, JSON, prose, planted secrets)'),
    ...rows.map(
      (r) =>
        `${`${r.mb} MB`.padEnd(8)} ${ms(r.ms).padStart(10)}   ${String(r.mbPerSec).padStart(6)} MB/s   ${r.redactions} redactions (${r.planted} secrets planted)`,
    ),
  ];
}

export function policySection(rows: PolicyRow[]): string[] {
  return [
    heading(`Policy: evaluate('run_command', …) latency, ${rows[0]?.ms.n ?? 0} calls each`),
    `${'p50'.padStart(9)} ${'p95'.padStart(9)}   decision  command`,
    ...rows.map(
      (r) => `${`${r.ms.p50.toFixed(3)} ms`.padStart(9)} ${`${r.ms.p95.toFixed(3)} ms`.padStart(9)}   ${r.decision.padEnd(8)}  ${r.command}  (${r.rule})`,
    ),
  ];
}

export function checksSection(rows: import('./checks.js').CheckRow[]): string[] {
  return [
    heading(
      'Checks: the same command run directly, in the sandbox (cold cache, then the warm per-repo cache), and as the verifier runs it (warm, traced, preloads)',
    ),
    `${'repo'.padEnd(10)} ${'command'.padEnd(21)} ${'direct'.padStart(10)} ${'sandbox cold'.padStart(13)} ${'sandbox warm'.padStart(13)} ${'verifier'.padStart(10)} ${'read trace'.padStart(11)}   exit codes`,
    ...rows.map(
      (r) =>
        `${r.repo.padEnd(10)} ${r.command.padEnd(21)} ${ms(r.directMs).padStart(10)} ${ms(r.sandboxColdMs).padStart(13)} ${ms(r.sandboxWarmMs).padStart(13)} ${ms(r.verifierMs).padStart(10)} ${ms(r.readTraceMs).padStart(11)}   ${r.exitCodes.join(' / ')}`,
    ),
    'The fixtures have failing tests on purpose: exit 1 is theirs; 127 would mean the sandbox could not find the toolchain.',
    'The counterfactual, when it runs, costs one more setup and run of the checks that failed on the base.',
  ];
}

export function verifyRealSection(rows: import('./verify-real.js').VerifyRealRow[]): string[] {
  return [
    heading('Verification on real libraries: the check untraced, and as the verifier runs it (traced, preloads), warm cache'),
    `${'task'.padEnd(30)} ${'untraced'.padStart(10)} ${'verifier'.padStart(10)} ${'×'.padStart(6)} ${'read trace'.padStart(11)} ${'paths'.padStart(7)}   exit codes`,
    ...rows.map((r) =>
      r.skipped
        ? `${r.task.padEnd(30)} skipped: ${r.skipped}`
        : `${r.task.padEnd(30)} ${ms(r.untracedMs).padStart(10)} ${ms(r.tracedMs).padStart(10)} ${(r.tracedMs / Math.max(1, r.untracedMs)).toFixed(2).padStart(6)} ${ms(r.readTraceMs).padStart(11)} ${String(r.filesReached).padStart(7)}   ${r.exitCodes.join(' / ')}`,
    ),
    'Each base has its planted bug, so exit 1 is expected. A counterfactual run costs one more setup and one more run of the checks that failed on the base (the untraced column is its floor); it runs only when the patch used more than product code.',
  ];
}
