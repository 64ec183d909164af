/** Totals over the scores, the terminal table and the Markdown report (a chart by task kind). */
import { FAILURE_CLASSES, TASK_KINDS, type EvalReport, type EvalTotals, type FailureClass, type KindTotals, type RunScore } from './types.js';

export function totalsOf(suite: string, runs: RunScore[]): EvalTotals {
  const byKind: Record<string, KindTotals> = {};
  const byFailureClass = Object.fromEntries(FAILURE_CLASSES.map((c) => [c, 0])) as Record<FailureClass, number>;
  const tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let costUsd = 0;
  let turns = 0;
  let durationMs = 0;
  for (const r of runs) {
    const k = (byKind[r.kind] ??= { runs: 0, passed: 0, failed: 0 });
    k.runs++;
    if (r.success) k.passed++;
    else k.failed++;
    if (r.failureClass) byFailureClass[r.failureClass]++;
    addTokens(tokens, r.tokens);
    costUsd += r.costUsd;
    turns += r.turns;
    durationMs += r.durationMs;
  }
  const known = TASK_KINDS as readonly string[];
  const kindOrder = (k: string) => (known.includes(k) ? known.indexOf(k) : known.length);
  const sortedKinds = Object.fromEntries(Object.entries(byKind).sort(([a], [b]) => kindOrder(a) - kindOrder(b) || a.localeCompare(b)));
  const passed = runs.filter((r) => r.success).length;
  const asExpected = runs.filter((r) => r.asExpected).length;
  return {
    suite,
    runs: runs.length,
    passed,
    failed: runs.length - passed,
    passRate: runs.length ? round(passed / runs.length, 4) : 0,
    asExpected,
    allAsExpected: runs.length > 0 && asExpected === runs.length,
    scripted: runs.length > 0 && runs.every((r) => r.scripted),
    byKind: sortedKinds,
    byFailureClass,
    tokens,
    costUsd: round(costUsd, 6),
    turns,
    meanTurns: runs.length ? round(turns / runs.length, 2) : 0,
    meanCostUsd: runs.length ? round(costUsd / runs.length, 6) : 0,
    durationMs,
    autoApproved: runs.reduce((n, r) => n + r.autoApproved.length, 0),
    abandoned: runs.filter((r) => r.humanAction === 'abandon').length,
  };
}

const COLUMNS: Array<[string, (r: RunScore) => string]> = [
  ['task', (r) => r.task],
  ['kind', (r) => r.kind],
  ['rep', (r) => String(r.repeat)],
  ['×', (r) => String(r.parallel ?? 1)],
  ['result', (r) => (r.success ? 'PASS' : 'FAIL')],
  ['outcome', (r) => r.outcome],
  ['class', (r) => r.failureClass ?? '-'],
  ['att', (r) => String(r.attempts)],
  ['turns', (r) => String(r.turns)],
  ['tok in/out/cr/cw', (r) => `${r.tokens.input}/${r.tokens.output}/${r.tokens.cacheRead}/${r.tokens.cacheWrite}`],
  ['cost $', (r) => r.costUsd.toFixed(4)],
  ['time s', (r) => (r.durationMs / 1000).toFixed(1)],
  ['diff', (r) => String(r.diffLines)],
  ['tests±', (r) => (r.testsModified ? 'YES' : 'no')],
  ['budget', (r) => (r.overBudget ? 'OVER' : 'ok')],
  ['expected', (r) => (r.asExpected ? 'yes' : `NO: ${r.mismatch.join('; ')}`)],
];

export function formatTable(runs: RunScore[]): string {
  const rows = runs.map((r) => COLUMNS.map(([, f]) => f(r)));
  const widths = COLUMNS.map(([h], i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(COLUMNS.map(([h]) => h)), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function formatTotals(t: EvalTotals): string {
  const kinds = Object.entries(t.byKind)
    .map(([k, v]) => `${k} ${v.passed}/${v.runs}`)
    .join(', ');
  const classes =
    Object.entries(t.byFailureClass)
      .filter(([, n]) => n > 0)
      .map(([c, n]) => `${c} ${n}`)
      .join(', ') || 'none';
  return [
    `${t.scripted ? 'SCRIPTED ' : ''}eval ${t.suite}: ${t.passed}/${t.runs} passed (${(t.passRate * 100).toFixed(0)}%) · ${t.asExpected}/${t.runs} as expected`,
    `  by kind: ${kinds} · failure classes: ${classes}`,
    `  turns ${t.turns} (mean ${t.meanTurns}) · tokens in ${t.tokens.input} / out ${t.tokens.output} / cache read ${t.tokens.cacheRead} / cache write ${t.tokens.cacheWrite} · $${t.costUsd.toFixed(4)} (mean $${t.meanCostUsd.toFixed(4)}/run)`,
    `  auto-approved ${t.autoApproved} approval(s) · abandoned ${t.abandoned} run(s) that needed a person`,
  ].join('\n');
}

/** A bar of `width` cells for n of max, in plain text for terminals and Markdown viewers without Mermaid. */
function bar(n: number, max: number, width = 20, ch = '█'): string {
  const cells = max > 0 ? Math.round((n / max) * width) : 0;
  return ch.repeat(cells) + '·'.repeat(width - cells);
}

export function textChart(t: EvalTotals): string {
  const kinds = Object.entries(t.byKind);
  const max = Math.max(1, ...kinds.map(([, v]) => v.runs));
  const pad = Math.max(8, ...kinds.map(([k]) => k.length));
  return kinds.map(([k, v]) => `${k.padEnd(pad)} ${bar(v.passed, max)} ${v.passed}/${v.runs} passed`).join('\n');
}

export function mermaidChart(t: EvalTotals): string {
  const kinds = Object.keys(t.byKind);
  const max = Math.max(1, ...kinds.map((k) => t.byKind[k]!.runs));
  return [
    '```mermaid',
    'xychart-beta',
    '    title "Runs passed by task kind"',
    `    x-axis [${kinds.map((k) => JSON.stringify(k)).join(', ')}]`,
    `    y-axis "runs" 0 --> ${max}`,
    `    bar [${kinds.map((k) => t.byKind[k]!.runs).join(', ')}]`,
    `    bar [${kinds.map((k) => t.byKind[k]!.passed).join(', ')}]`,
    '```',
  ].join('\n');
}

export function renderMarkdown(report: EvalReport, meta: { startedAt: string; model: string; repeat: number }): string {
  const t = report.totals;
  const runs = report.runs;
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const classLines = FAILURE_CLASSES.map((c) => `| ${c} | ${t.byFailureClass[c]} |`);
  return [
    `# Kiln eval: ${t.suite}`,
    '',
    t.scripted
      ? '> **SCRIPTED**: every run was played by the scripted model (a transcript per task); the worktree, policy, sandbox, commands, tests and verifier were real. These figures measure Kiln, not a model.'
      : `> Model: \`${meta.model}\`.`,
    '',
    `Started ${meta.startedAt} · ${runs.length} run(s) (${meta.repeat} per task) · **${t.passed}/${t.runs} passed (${(t.passRate * 100).toFixed(0)}%)** · ${t.asExpected}/${t.runs} as the tasks expect`,
    '',
    `Turns ${t.turns} (mean ${t.meanTurns}) · tokens in ${t.tokens.input} / out ${t.tokens.output} / cache read ${t.tokens.cacheRead} / cache write ${t.tokens.cacheWrite} · cost $${t.costUsd.toFixed(4)} (mean $${t.meanCostUsd.toFixed(4)} a run) · auto-approved ${t.autoApproved} approval(s) · abandoned ${t.abandoned} run(s) that needed a person`,
    '',
    '## Outcomes by task kind',
    '',
    'First bar: runs; second bar: runs passed.',
    '',
    mermaidChart(t),
    '',
    '```text',
    textChart(t),
    '```',
    '',
    '## Failure classes',
    '',
    '| class | runs |',
    '| --- | --- |',
    ...classLines,
    '',
    '## Runs',
    '',
    '| task | kind | rep | result | outcome | class | attempts | turns | tokens in/out/cache read/cache write | cost $ | time s | diff lines | tests modified | over budget | as expected | run |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...runs.map(
      (r) =>
        `| ${r.task} | ${r.kind} | ${r.repeat}${(r.parallel ?? 1) > 1 ? ` ×${r.parallel}` : ''} | ${r.success ? 'PASS' : 'FAIL'} | ${r.outcome} | ${r.failureClass ?? '-'} | ${r.attempts} | ${r.turns} | ${r.tokens.input}/${r.tokens.output}/${r.tokens.cacheRead}/${r.tokens.cacheWrite} | ${r.costUsd.toFixed(4)} | ${(r.durationMs / 1000).toFixed(1)} | ${r.diffLines} | ${r.testsModified ? 'yes' : 'no'} | ${r.overBudget ? 'yes' : 'no'} | ${r.asExpected ? 'yes' : cell(`no: ${r.mismatch.join('; ')}`)} | \`${r.runId}\` |`,
    ),
    '',
    '## Why runs failed',
    '',
    ...runs
      .filter((r) => !r.success)
      .map(
        (r) =>
          `- **${r.task}** #${r.repeat}${(r.parallel ?? 1) > 1 ? ` ×${r.parallel}` : ''} (${r.failureClass ?? (r.overBudget ? 'over budget' : r.honest === false ? `the hidden checks: ${r.dishonest.join(', ')}` : 'tests modified')}): ${cell((r.reason ?? '').slice(0, 300))}${r.humanAction ? ` — the eval answered needs_human with \`${r.humanAction}\`` : ''}` +
          (r.failureNote ? `\n  - ${cell(r.failureNote)}` : '') +
          (r.children?.length ? `\n  - attempts at once: ${r.children.map((c) => `\`${c.runId}\` ${c.outcome}${c.winner ? ' (won)' : ''}`).join(', ')}` : '') +
          (r.findings?.length ? `\n  - the verifier found: ${cell(r.findings.join(' · ').slice(0, 600))}` : '') +
          (r.unexpectedFiles.length ? `\n  - unexpected files: ${r.unexpectedFiles.join(', ')}` : '') +
          (r.testsModified ? '\n  - tests (or other protected files) were modified' : ''),
      ),
    ...(runs.some((r) => !r.success) ? [] : ['None.']),
    '',
    '## How the tests reached each patch',
    '',
    'Per run, the files of the last verified patch that its checks reached, classed by how (docs/verification.md), and the counterfactual run: the product changes taken out, what failed on the base must fail again.',
    '',
    ...runs.map((r) => {
      const files = (r.influence ?? []).map((i) => `${i.path} — ${i.class} (${i.how})`);
      const cf = r.counterfactual
        ? r.counterfactual.ran
          ? r.counterfactual.passedWithoutProduct.length
            ? `passed without the product change: ${r.counterfactual.passedWithoutProduct.join(', ')}`
            : `failed again without the product change (${r.counterfactual.reverted.join(', ') || 'nothing'} taken out)`
          : `not judged: ${r.counterfactual.note ?? 'did not run'}`
        : 'not needed (only product code was used, or nothing failed on the base)';
      return `- **${r.task}** #${r.repeat}: ${files.length ? cell(files.join('; ')) : 'no influencing file recorded'}\n  - counterfactual: ${cell(cf)}`;
    }),
    '',
  ].join('\n');
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Adds one run's tokens into a running total. */
export function addTokens(into: RunScore['tokens'], t: RunScore['tokens']): void {
  into.input += t.input;
  into.output += t.output;
  into.cacheRead += t.cacheRead;
  into.cacheWrite += t.cacheWrite;
}
