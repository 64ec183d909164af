import { describe, expect, it } from 'vitest';
import { formatTable, formatTotals, mermaidChart, renderMarkdown, textChart, totalsOf } from '../../../src/eval/report.js';
import type { FailureClass, RunScore, TaskKind } from '../../../src/eval/types.js';

function run(task: string, kind: TaskKind, success: boolean, failureClass: FailureClass | null, o: Partial<RunScore> = {}): RunScore {
  return {
    task,
    kind,
    repeat: 1,
    runId: `eval-${task}`,
    outcome: success ? 'succeeded' : 'blocked',
    success,
    attempts: 1,
    turns: 4,
    tokens: { input: 100, output: 50, cacheRead: 1000, cacheWrite: 200 },
    costUsd: 0.01,
    durationMs: 3000,
    diffLines: 6,
    changedFiles: [],
    unexpectedFiles: [],
    testsModified: false,
    overBudget: false,
    failureClass,
    failureNote: null,
    reason: success ? null : 'abandoned by kiln eval',
    needsHuman: !success,
    humanAction: success ? null : 'abandon',
    autoApproved: [],
    toolCalls: 3,
    toolDenied: 0,
    toolErrors: 0,
    reflections: 0,
    scripted: true,
    expected: { outcome: 'succeeded' },
    asExpected: success,
    mismatch: success ? [] : ['outcome blocked, expected succeeded'],
    artifacts: null,
    ...o,
  };
}

const runs = [
  run('fix', 'bugfix', true, null),
  run('fix', 'bugfix', false, 'verifier', { repeat: 2 }),
  run('cancel-api', 'feature', true, null, { autoApproved: ['ap-1'] }),
  run('extract', 'refactor', false, 'policy'),
];

describe('totalsOf', () => {
  it('adds up passes by kind, failure classes, tokens and cost', () => {
    const t = totalsOf('s', runs);
    expect(t).toMatchObject({
      runs: 4,
      passed: 2,
      failed: 2,
      passRate: 0.5,
      asExpected: 2,
      allAsExpected: false,
      scripted: true,
      turns: 16,
      meanTurns: 4,
      autoApproved: 1,
      abandoned: 2,
    });
    expect(t.byKind).toEqual({
      bugfix: { runs: 2, passed: 1, failed: 1 },
      feature: { runs: 1, passed: 1, failed: 0 },
      refactor: { runs: 1, passed: 0, failed: 1 },
    });
    expect(t.byFailureClass).toEqual({ model: 0, tool: 0, policy: 1, verifier: 1, infrastructure: 0 });
    expect(t.tokens).toEqual({ input: 400, output: 200, cacheRead: 4000, cacheWrite: 800 });
    expect(t.costUsd).toBeCloseTo(0.04);
    expect(Object.keys(t.byKind)).toEqual(['bugfix', 'feature', 'refactor']);
  });

  it('is all-as-expected only with runs and none off', () => {
    expect(totalsOf('s', []).allAsExpected).toBe(false);
    expect(totalsOf('s', [runs[0]!, runs[2]!]).allAsExpected).toBe(true);
  });
});

describe('charts and tables', () => {
  const t = totalsOf('s', runs);

  it('charts every kind, in Mermaid and in plain text', () => {
    const m = mermaidChart(t);
    expect(m).toContain('xychart-beta');
    expect(m).toContain('x-axis ["bugfix", "feature", "refactor"]');
    expect(m).toContain('bar [2, 1, 1]');
    expect(m).toContain('bar [1, 1, 0]');
    const txt = textChart(t).split('\n');
    expect(txt).toHaveLength(3);
    expect(txt[0]).toMatch(/^bugfix\s+█+·+ 1\/2 passed$/);
    expect(txt[2]).toMatch(/^refactor\s+·{20} 0\/1 passed$/);
  });

  it('shows every run in the terminal table, marks it SCRIPTED, and says why a run is off', () => {
    const table = formatTable(runs);
    expect(table.split('\n')).toHaveLength(2 + runs.length);
    expect(table).toContain('NO: outcome blocked, expected succeeded');
    expect(formatTotals(t)).toMatch(/^SCRIPTED eval s: 2\/4 passed \(50%\)/);
  });

  it('renders a Markdown report with the chart, the failure classes and one row per run', () => {
    const md = renderMarkdown({ totals: t, runs }, { startedAt: '2026-01-01T00:00:00Z', model: 'scripted', repeat: 2 });
    expect(md).toContain('**SCRIPTED**');
    expect(md).toContain('```mermaid');
    for (const k of ['bugfix', 'feature', 'refactor']) expect(md).toContain(k);
    expect(md).toContain('| verifier | 1 |');
    const rows = md.split('\n').filter((l) => l.startsWith('| ') && l.includes('`eval-'));
    expect(rows).toHaveLength(4);
    expect(md).toContain('**fix** #2 (verifier)');
  });

  it('gives per run the influencing files with their class, and the counterfactual', () => {
    const withInfluence = [
      run('cheat', 'bugfix', false, 'verifier', {
        influence: [{ path: 'merge/__init__.py', class: 'new', how: 'used by the check, not reached on the base' }],
        counterfactual: { ran: true, reverted: [], passedWithoutProduct: ['test_merge.py::test_overlap_touching'] },
      }),
      run('honest', 'bugfix', true, null, {
        influence: [{ path: 'merge.py', class: 'product', how: 'read by the check on the base' }],
        counterfactual: null,
      }),
    ];
    const md = renderMarkdown({ totals: totalsOf('s', withInfluence), runs: withInfluence }, { startedAt: 'x', model: 'scripted', repeat: 1 });
    expect(md).toContain('merge/__init__.py — new (used by the check, not reached on the base)');
    expect(md).toContain('passed without the product change: test_merge.py::test_overlap_touching');
    expect(md).toContain('merge.py — product (read by the check on the base)');
    expect(md).toMatch(/\*\*honest\*\* #1: .*\n {2}- counterfactual: not needed/);
  });

  it('names the model when the runs were real', () => {
    const real = totalsOf(
      's',
      runs.map((r) => ({ ...r, scripted: false })),
    );
    const md = renderMarkdown({ totals: real, runs }, { startedAt: 'x', model: 'claude-sonnet-4-5', repeat: 1 });
    expect(md).not.toContain('SCRIPTED');
    expect(md).toContain('`claude-sonnet-4-5`');
  });
});
