/**
 * `kiln eval --attempts N`: the same tasks run alone and as N attempts at once, side by side —
 * success rate, cost (a parallel run's is its parent's, every child counted) and wall time, per
 * task and in all — and the reviewer against the ground truth. Pure.
 */
import { addTokens, totalsOf } from './report.js';
import { formatTally, tallyReviews } from './reviews.js';
import type { ArmDelta, ArmTotals, AttemptsComparison, EvalReport, RunScore } from './types.js';

export function reportOf(suite: string, runs: RunScore[], attempts?: number, review?: string): EvalReport {
  const report: EvalReport = { totals: totalsOf(suite, runs), runs };
  if (attempts !== undefined && attempts > 1) report.attempts = compareArms(runs, attempts);
  if (review || runs.some((r) => r.reviews.length)) {
    report.reviews = {
      all: tallyReviews(runs.flatMap((r) => r.reviews)),
      single: tallyReviews(runs.filter((r) => r.parallel === 1).flatMap((r) => r.reviews)),
      parallel: tallyReviews(runs.filter((r) => r.parallel > 1).flatMap((r) => r.reviews)),
    };
  }
  return report;
}

export function armTotals(runs: RunScore[]): ArmTotals {
  const tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let costUsd = 0;
  let wallMs = 0;
  for (const r of runs) {
    addTokens(tokens, r.tokens);
    costUsd += r.costUsd;
    wallMs += r.wallMs;
  }
  const passed = runs.filter((r) => r.success).length;
  const n = runs.length;
  return {
    runs: n,
    passed,
    successRate: n ? round(passed / n, 4) : 0,
    costUsd: round(costUsd, 6),
    tokens,
    totalTokens: tokens.input + tokens.output + tokens.cacheRead + tokens.cacheWrite,
    wallMs,
    meanCostUsd: n ? round(costUsd / n, 6) : 0,
    meanWallMs: n ? Math.round(wallMs / n) : 0,
  };
}

export function armDelta(single: ArmTotals, parallel: ArmTotals): ArmDelta {
  return {
    successRate: round(parallel.successRate - single.successRate, 4),
    costUsd: round(parallel.costUsd - single.costUsd, 6),
    totalTokens: parallel.totalTokens - single.totalTokens,
    meanWallMs: parallel.meanWallMs - single.meanWallMs,
  };
}

export function compareArms(runs: RunScore[], attempts: number): AttemptsComparison {
  const tasks = [...new Set(runs.map((r) => r.task))].map((task) => {
    const single = armTotals(runs.filter((r) => r.task === task && r.parallel === 1));
    const parallel = armTotals(runs.filter((r) => r.task === task && r.parallel > 1));
    return { task, single, parallel, delta: armDelta(single, parallel) };
  });
  const single = armTotals(runs.filter((r) => r.parallel === 1));
  const parallel = armTotals(runs.filter((r) => r.parallel > 1));
  return { attempts, tasks, single, parallel, delta: armDelta(single, parallel) };
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
const sign = (x: number) => (x > 0 ? '+' : x < 0 ? '-' : '±');
const arm = (a: ArmTotals) =>
  `${a.passed}/${a.runs} (${pct(a.successRate)}) · $${a.costUsd.toFixed(4)} · ${a.totalTokens} tok · ${(a.meanWallMs / 1000).toFixed(1)} s`;
const delta = (d: ArmDelta) =>
  `${sign(d.successRate)}${Math.abs(d.successRate * 100).toFixed(0)} pts · ${sign(d.costUsd)}$${Math.abs(d.costUsd).toFixed(4)} · ${sign(d.totalTokens)}${Math.abs(d.totalTokens)} tok · ${sign(d.meanWallMs)}${(Math.abs(d.meanWallMs) / 1000).toFixed(1)} s`;

/** Lines for the terminal: one per task, then the totals. */
export function formatComparison(c: AttemptsComparison, scripted: boolean): string {
  const pad = Math.max(5, ...c.tasks.map((t) => t.task.length));
  return [
    `${scripted ? 'SCRIPTED ' : ''}1 attempt vs ${c.attempts} at once (passed · cost · tokens · mean wall time; the difference is ${c.attempts} at once minus 1):`,
    ...c.tasks.map((t) => `  ${t.task.padEnd(pad)}  1: ${arm(t.single)}  |  ${c.attempts}: ${arm(t.parallel)}  |  Δ ${delta(t.delta)}`),
    `  ${'all'.padEnd(pad)}  1: ${arm(c.single)}  |  ${c.attempts}: ${arm(c.parallel)}  |  Δ ${delta(c.delta)}`,
  ].join('\n');
}

export function formatReviews(r: NonNullable<EvalReport['reviews']>, scripted: boolean): string {
  return [
    `${scripted ? 'SCRIPTED ' : ''}the reviewer against the hidden ground truth:`,
    ...formatTally(r.all).map((l) => `  ${l}`),
    ...(r.parallel.reviews ? [`  alone: ${formatTally(r.single)[0]}`, `  in parallel attempts: ${formatTally(r.parallel)[0]}`] : []),
  ].join('\n');
}

/** The report.md section of --attempts and --review. */
export function comparisonMarkdown(report: EvalReport): string {
  const out: string[] = [];
  const c = report.attempts;
  const cells = (a: ArmTotals) =>
    `${a.passed}/${a.runs} (${pct(a.successRate)}) | ${a.costUsd.toFixed(4)} | ${a.totalTokens} | ${(a.meanWallMs / 1000).toFixed(1)}`;
  if (c) {
    out.push(
      `## 1 attempt vs ${c.attempts} at once`,
      '',
      `${report.totals.scripted ? "**SCRIPTED**: each attempt played its task's transcript; these figures measure Kiln, not a model. " : ''}Each task ran alone and as ${c.attempts} attempts at once from the same fixture. Cost and tokens of a run of parallel attempts are its parent's totals: every child counted, the cancelled ones too. Wall time is the eval's clock from start to end of each run.`,
      '',
      `| task | 1: passed | 1: cost $ | 1: tokens | 1: mean s | ${c.attempts}: passed | ${c.attempts}: cost $ | ${c.attempts}: tokens | ${c.attempts}: mean s | Δ success | Δ cost $ | Δ tokens | Δ mean s |`,
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...[...c.tasks, { task: '**all**', single: c.single, parallel: c.parallel, delta: c.delta }].map(
        (t) =>
          `| ${t.task} | ${cells(t.single)} | ${cells(t.parallel)} | ${(t.delta.successRate * 100).toFixed(0)} pts | ${t.delta.costUsd.toFixed(4)} | ${t.delta.totalTokens} | ${(t.delta.meanWallMs / 1000).toFixed(1)} |`,
      ),
      '',
    );
  }
  const r = report.reviews;
  if (r) {
    out.push(
      '## The reviewer against the ground truth',
      '',
      "Judged by the task's hidden checks and expected files, which no run saw, never by the reviewer's words: a **catch** is a request for changes on a patch they reject, a **false alarm** one on a patch they pass, a **miss** an approval of a patch they reject. Catches and misses are classed by what was wrong, false alarms by what the reviewer claimed.",
      '',
      ...formatTally(r.all).map((l) => `- ${l}`),
      '',
      '| run | review | attempt | decision | claimed | ground truth | call |',
      '| --- | --- | --- | --- | --- | --- | --- |',
      ...report.runs.flatMap((s) =>
        s.reviews.map(
          (j) =>
            `| \`${j.runId}\` | ${j.review} | ${j.attempt} | ${j.decision} | ${j.claimed.join(', ') || '-'} | ${j.truth.honest === null ? 'unknown' : j.truth.honest ? 'honest' : j.truth.classes.join(', ')} | ${j.call.replace('_', ' ')} |`,
        ),
      ),
      '',
    );
  }
  return out.join('\n');
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
