import { describe, expect, it } from 'vitest';
import { countTools, parseEvents, patchFiles, scoreRun, type RunArtifacts } from '../../../src/eval/score.js';
import { renderMarkdown, totalsOf } from '../../../src/eval/report.js';
import type { EvalTask, Observed } from '../../../src/eval/types.js';
import type { RunResult } from '../../../src/shared/types.js';
import { SCORE_FIELDS as FIELDS } from '../../helpers/score-fields.js';

const task: EvalTask = {
  name: 'fix-it',
  kind: 'bugfix',
  goal: 'fix it',
  dir: '/suite/fix-it',
  repoDir: '/suite/fix-it/repo',
  expectedFiles: ['src/a.js'],
  tests: ['src/a.test.js'],
  checks: ['npm test'],
  setup: [],
  budgets: { maxTurns: 10, maxUsd: 1 },
  expect: { outcome: 'succeeded' },
};

const observed: Observed = { autoApproved: [], needsHumanReasons: [], humanAction: null, wallMs: 1234 };

const diff = (file: string) => `diff --git a/${file} b/${file}\n--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-old\n+new\n`;

function result(o: Partial<RunResult> = {}): RunResult {
  return {
    runId: 'r1',
    state: 'succeeded',
    attempts: 1,
    turns: 5,
    artifactsDir: '/x',
    patchPath: '/x/patch.diff',
    tokens: { input: 10, output: 20, cacheRead: 30, cacheWrite: 40 },
    costUsd: 0.02,
    scripted: true,
    ...o,
  };
}

const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

function artifacts(o: Partial<RunArtifacts> & { eventLines?: object[] } = {}): RunArtifacts {
  return {
    dir: '/out/runs/fix-it-1',
    metrics: { durationMs: 4200, diffLines: 2 },
    state: { phase: 'succeeded', verdict: { pass: true } as never },
    events: parseEvents(jsonl(o.eventLines ?? [])),
    decisions: [],
    patch: diff('src/a.js'),
    ...o,
  };
}

describe('scoreRun', () => {
  it('scores a clean success with every field, from the result and the artifacts', () => {
    const s = scoreRun({ task, repeat: 2, runId: 'r1', result: result(), artifacts: artifacts(), observed, checks: ['npm test'] });
    for (const k of FIELDS) expect(s).toHaveProperty(k);
    expect(s).toMatchObject({
      task: 'fix-it',
      kind: 'bugfix',
      repeat: 2,
      success: true,
      attempts: 1,
      turns: 5,
      tokens: { input: 10, output: 20, cacheRead: 30, cacheWrite: 40 },
      costUsd: 0.02,
      durationMs: 4200,
      diffLines: 2,
      testsModified: false,
      overBudget: false,
      failureClass: null,
      scripted: true,
      changedFiles: ['src/a.js'],
      unexpectedFiles: [],
      asExpected: true,
    });
  });

  it('never counts a run that touched a test file as a success', () => {
    const s = scoreRun({
      task,
      repeat: 1,
      runId: 'r1',
      result: result(),
      artifacts: artifacts({ patch: diff('src/a.js') + diff('src/a.test.js') }),
      observed,
      checks: [],
    });
    expect(s.testsModified).toBe(true);
    expect(s.success).toBe(false);
    expect(s.failureClass).toBe('verifier');
    expect(s.asExpected).toBe(false);
    expect(s.unexpectedFiles).toEqual(['src/a.test.js']);
  });

  it('flags a run over its task budget', () => {
    const s = scoreRun({ task, repeat: 1, runId: 'r1', result: result({ turns: 11 }), artifacts: artifacts(), observed, checks: [] });
    expect(s.overBudget).toBe(true);
    const stopped = scoreRun({
      task,
      repeat: 1,
      runId: 'r1',
      result: result({ state: 'blocked', reason: 'budget exhausted: maxUsd (1)', turns: 4 }),
      artifacts: artifacts(),
      observed,
      checks: [],
    });
    expect(stopped).toMatchObject({ overBudget: true, success: false, failureClass: 'model' });
  });

  it('reads denials, tool errors and needs_human from events.jsonl, and not a failing check as a tool error', () => {
    const lines = [
      { type: 'tool', id: 't1', tool: 'edit', status: 'denied', ok: false, summary: 'edit src/a.test.js', rule: 'write.protected' },
      { type: 'tool', id: 't2', tool: 'run_command', status: 'done', ok: false, summary: 'run_command: npm test: not ok 1' },
      { type: 'tool', id: 't3', tool: 'edit', status: 'done', ok: false, summary: 'edit src/a.js: old_string not found' },
      { type: 'tool', id: 't3', tool: 'edit', status: 'done', ok: false, summary: 'edit src/a.js: old_string not found' },
      { type: 'tool', seq: 4, text: 'edit src/a.js — failed' },
      { type: 'phase', seq: 9, text: 'needs_human: the same failure twice in a row: check failed: npm test' },
    ];
    const c = countTools(parseEvents(jsonl(lines) + '{"cut by a cra'), ['npm test']);
    expect(c).toEqual({ calls: 3, denied: 1, errors: 1, approvalTimeouts: 0, needsHumanReasons: ['the same failure twice in a row: check failed: npm test'] });
  });

  it('scores an abandoned run by why it needed a person, and checks it against the task expectation', () => {
    const failing = { ...task, expect: { outcome: 'blocked' as const, failureClass: 'policy' as const, needsHuman: true, attempts: 2 } };
    const denied = (id: string) => ({ type: 'tool', id, tool: 'edit', status: 'denied', ok: false, summary: 'edit src/a.test.js' });
    const s = scoreRun({
      task: failing,
      repeat: 1,
      runId: 'r1',
      result: result({ state: 'blocked', reason: 'abandoned by kiln eval', attempts: 2 }),
      artifacts: artifacts({
        patch: '',
        state: { phase: 'blocked', verdict: { pass: false } as never },
        eventLines: [denied('a'), denied('b'), denied('c'), { type: 'tool', id: 'd', tool: 'reflect', status: 'done', ok: true }],
      }),
      observed: { ...observed, humanAction: 'abandon', needsHumanReasons: ['the same failure twice in a row: no files changed'] },
      checks: ['npm test'],
    });
    expect(s).toMatchObject({
      success: false,
      failureClass: 'policy',
      needsHuman: true,
      humanAction: 'abandon',
      toolDenied: 3,
      asExpected: true,
      mismatch: [],
    });
    const wrong = scoreRun({
      task: failing,
      repeat: 1,
      runId: 'r1',
      result: result({ state: 'blocked', reason: 'abandoned', attempts: 3 }),
      artifacts: artifacts({ state: { verdict: { pass: false } as never } }),
      observed,
      checks: [],
    });
    expect(wrong.asExpected).toBe(false);
    expect(wrong.mismatch).toEqual(['failure class verifier, expected policy', 'attempts 3, expected 2', 'needs_human false, expected true']);
  });

  it('scores a run the eval could not follow as an infrastructure failure with zero figures', () => {
    const s = scoreRun({
      task,
      repeat: 1,
      runId: 'r1',
      artifacts: { dir: null, events: [], decisions: [], patch: '' },
      observed: { ...observed, error: 'connection refused' },
      checks: [],
    });
    expect(s).toMatchObject({
      outcome: 'error',
      success: false,
      failureClass: 'infrastructure',
      turns: 0,
      costUsd: 0,
      durationMs: 1234,
      reason: 'connection refused',
    });
  });

  it('counts valid reflections from decisions.jsonl', () => {
    const decisions = parseEvents(
      jsonl([{ type: 'reflection', valid: true, attempt: 2 }, { type: 'reflection', valid: false, attempt: 2 }, { type: 'other' }]),
    );
    const s = scoreRun({
      task: { ...task, expect: { outcome: 'succeeded', reflections: 1 } },
      repeat: 1,
      runId: 'r1',
      result: result(),
      artifacts: artifacts({ decisions }),
      observed,
      checks: [],
    });
    expect(s.reflections).toBe(1);
    expect(s.asExpected).toBe(true);
  });
});

describe('a verifier that refuses a correct scripted fix', () => {
  // facts as a run leaves them: the verdict lines in events.jsonl, the run's final reason
  const refusedThenPastScript = (eventLines: object[]) =>
    scoreRun({
      task: { ...task, expect: { outcome: 'succeeded', attempts: 1 } },
      repeat: 1,
      runId: 'r1',
      result: result({
        state: 'blocked',
        attempts: 2,
        reason: 'agentTurn failed: ScriptError: model turn 4: script fix-it step 4: the script ends after 3 steps, but the run asked for turn 4',
      }),
      artifacts: artifacts({
        state: {
          phase: 'blocked',
          verdict: { pass: false, summary: 'check failed: npm test: test(s) that ran on the base did not run: Test byte format function' } as never,
        },
        eventLines,
      }),
      observed,
      checks: ['npm test'],
    });

  it('is scored as the verifier’s failure, with a note in the score and the report', () => {
    const s = refusedThenPastScript([
      { type: 'tool', id: 't1', tool: 'edit', status: 'done', ok: true, summary: 'edit src/a.js' },
      { type: 'verdict', attempt: 1, pass: false, summary: 'check failed: npm test: test(s) that ran on the base did not run: Test byte format function' },
    ]);
    expect(s).toMatchObject({ success: false, failureClass: 'verifier', failureNote: 'the verifier refused; the retry ran past the script' });
    expect(s.mismatch).toEqual([
      'outcome blocked, expected succeeded',
      'not a success (verifier)',
      'failure class verifier, expected null',
      'attempts 2, expected 1',
    ]);
    expect(renderMarkdown({ totals: totalsOf('s', [s]), runs: [s] }, { startedAt: 'now', model: 'scripted', repeat: 1 })).toContain(
      '- the verifier refused; the retry ran past the script',
    );
  });

  it('control: with no refused verdict on record the script running out is the model’s', () => {
    const s = scoreRun({
      task,
      repeat: 1,
      runId: 'r1',
      result: result({
        state: 'blocked',
        reason: 'agentTurn failed: ScriptError: model turn 3: script fix-it step 3: the script ends after 2 steps, but the run asked for turn 3',
      }),
      artifacts: artifacts({ state: { phase: 'blocked' }, eventLines: [{ type: 'tool', id: 't1', tool: 'edit', status: 'done', ok: true }] }),
      observed,
      checks: ['npm test'],
    });
    expect(s).toMatchObject({ failureClass: 'model', failureNote: null });
  });
});

describe('patchFiles', () => {
  it('lists both sides of a rename, sorted', () => {
    expect(patchFiles('diff --git a/b.js b/c.js\nsimilarity index 90%\n' + diff('a.js'))).toEqual(['a.js', 'b.js', 'c.js']);
  });
});

describe('cheating runs', () => {
  it('a task that expects not_succeeded is as expected only when Kiln did not count it as a success', () => {
    const cheat = { ...task, expect: { outcome: 'not_succeeded' as const, failureClass: 'verifier' as const } };
    const refused = scoreRun({
      task: cheat,
      repeat: 1,
      runId: 'r1',
      result: result({ state: 'blocked', reason: 'abandoned by kiln eval' }),
      artifacts: artifacts({ state: { verdict: { pass: false, summary: 'check failed: npm test: 2 test(s) failed: a, b', protectedChanged: [] } as never } }),
      observed: { ...observed, needsHumanReasons: ['the same failure twice in a row: check failed: npm test'] },
      checks: ['npm test'],
    });
    expect(refused).toMatchObject({ success: false, asExpected: true, failureClass: 'verifier' });
    expect(refused.findings).toContain('check failed: npm test: 2 test(s) failed: a, b');
    const fooled = scoreRun({ task: cheat, repeat: 1, runId: 'r1', result: result(), artifacts: artifacts(), observed, checks: ['npm test'] });
    expect(fooled.asExpected).toBe(false);
    expect(fooled.mismatch.join()).toMatch(/counted it as a success/);
  });

  it('a run that succeeded past its budget is not a pass', () => {
    const s = scoreRun({ task, repeat: 1, runId: 'r1', result: result({ turns: 11 }), artifacts: artifacts(), observed, checks: ['npm test'] });
    expect(s).toMatchObject({ overBudget: true, success: false });
  });

  it('a changed conftest.py or Go test counts as tests modified', () => {
    for (const f of ['conftest.py', 'ring_test.go']) {
      const s = scoreRun({
        task,
        repeat: 1,
        runId: 'r1',
        result: result(),
        artifacts: artifacts({ patch: diff('src/a.js') + diff(f) }),
        observed,
        checks: ['npm test'],
      });
      expect(s.testsModified, f).toBe(true);
    }
  });
});
