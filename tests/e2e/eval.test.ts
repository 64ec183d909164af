/**
 * `kiln eval` as a user runs it: the built CLI, the embedded Temporal server, real worktrees,
 * policy, sandbox and tests; the scripted model plays each task's transcript. Needs a fresh build.
 */
import { execa } from 'execa';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EvalReport, RunScore } from '../../src/eval/types.js';
import { ROOT } from '../helpers/repo.js';
import { SCORE_FIELDS as FIELDS } from '../helpers/score-fields.js';

async function kilnEval(args: string[]) {
  const home = mkdtempSync(join(tmpdir(), 'kiln-eval-home-'));
  const out = join(home, 'report');
  const res = await execa('node', [join(ROOT, 'bin', 'kiln.js'), 'eval', '--repeat', '1', '--json', '--out', out, ...args], {
    cwd: ROOT,
    reject: false,
    env: { KILN_HOME: home, ANTHROPIC_API_KEY: '', KILN_MODEL: '' },
    extendEnv: true,
  });
  const lines = res.stdout.trim().split('\n');
  let report: EvalReport;
  try {
    report = JSON.parse(lines[lines.length - 1]!) as EvalReport;
  } catch {
    throw new Error(`kiln eval (exit ${res.exitCode}) printed no JSON report last\nstdout:\n${res.stdout.slice(-3000)}\nstderr:\n${res.stderr.slice(-3000)}`);
  }
  return { res, report, out };
}

function byTask(report: EvalReport): Record<string, RunScore> {
  return Object.fromEntries(report.runs.map((r) => [r.task, r]));
}

function expectEveryField(report: EvalReport) {
  for (const r of report.runs) {
    for (const k of FIELDS) expect(r, `${r.task} lacks ${k}`).toHaveProperty(k);
    expect(Object.keys(r.tokens).sort()).toEqual(['cacheRead', 'cacheWrite', 'input', 'output']);
    expect(r.scripted).toBe(true);
  }
}

describe('kiln eval', () => {
  it(
    'runs the bundled suite: every task succeeds, scored from its artifacts, with a report',
    async () => {
      const { res, report, out } = await kilnEval([]);
      expect(res.exitCode, res.stderr.slice(-2000)).toBe(0);
      expect(res.stdout).toContain('SCRIPTED');
      expectEveryField(report);
      const runs = byTask(report);
      expect(Object.keys(runs).sort()).toEqual(['add-order-cancel-api', 'extract-money-format', 'fix-inflection-acronyms', 'fix-null-session']);
      for (const r of report.runs) {
        expect(r, r.task).toMatchObject({ success: true, outcome: 'succeeded', failureClass: null, testsModified: false, attempts: 1, unexpectedFiles: [] });
        expect(r.turns).toBeGreaterThan(0);
        expect(r.tokens.input + r.tokens.cacheRead + r.tokens.cacheWrite).toBeGreaterThan(0);
        expect(r.costUsd).toBeGreaterThan(0);
        expect(r.diffLines).toBeGreaterThan(0);
      }
      expect(runs['fix-null-session']!.changedFiles).toEqual(['src/auth/session.js']);
      expect(runs['add-order-cancel-api']!.changedFiles).toEqual(['src/modules/order/controller.js', 'src/modules/order/service.js']);
      // the real library: its own 455 tests, set up from PyPI, checked in the sandbox
      expect(runs['fix-inflection-acronyms']!.changedFiles).toEqual(['inflection/__init__.py']);
      const log = readFileSync(join(runs['fix-inflection-acronyms']!.artifacts!, 'tests.log'), 'utf8');
      expect(log).toMatch(/end of baseline: .*: 453 passed, 2 failed/);
      expect(log).toMatch(/\[verdict: pass; 455 passed, 0 failed \(pytest( junit)?\)\]/);
      expect(report.totals).toMatchObject({ runs: 4, passed: 4, passRate: 1, allAsExpected: true, scripted: true });

      const md = readFileSync(join(out, 'report.md'), 'utf8');
      expect(md).toContain('xychart-beta');
      for (const k of ['bugfix', 'feature', 'refactor']) expect(md).toContain(k);
      expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')).runs).toHaveLength(4);
      for (const r of report.runs) {
        for (const f of ['metrics.json', 'state.json', 'events.jsonl', 'patch.diff']) expect(existsSync(join(r.artifacts!, f)), `${r.task}: ${f}`).toBe(true);
      }
      // the library task builds a virtualenv from PyPI twice (the run, then the verified tree)
    },
    6 * 60_000,
  );

  it('scores the failures suite: retries, reflection, needs_human and each failure class', async () => {
    const { res, report } = await kilnEval(['--suite', join(ROOT, 'examples', 'eval-failures')]);
    expectEveryField(report);
    const runs = byTask(report);
    const off = report.runs.filter((r) => !r.asExpected).map((r) => `${r.task}: ${r.mismatch.join('; ')} (${r.reason})`);
    expect(off).toEqual([]);
    expect(res.exitCode).toBe(0);

    expect(runs['retry-then-pass']).toMatchObject({ success: true, attempts: 2, failureClass: null, reflections: 1 });
    expect(runs['exhaust-attempts']).toMatchObject({
      success: false,
      attempts: 3,
      failureClass: 'verifier',
      needsHuman: true,
      humanAction: 'abandon',
      reflections: 2,
    });
    expect(runs['edits-a-test']).toMatchObject({ success: false, failureClass: 'verifier', testsModified: true, autoApproved: ['ap-1'] });
    expect(runs['policy-denied']).toMatchObject({ success: false, failureClass: 'policy' });
    expect(runs['policy-denied']!.toolDenied).toBeGreaterThanOrEqual(3);
    expect(runs['tool-errors']).toMatchObject({ success: false, failureClass: 'tool' });
    expect(runs['script-mismatch']).toMatchObject({ failureClass: 'model', outcome: 'blocked' });
    expect(runs['script-mismatch']!.reason).toMatch(/ScriptError/);
    expect(runs['script-ends-early']).toMatchObject({ failureClass: 'model', attempts: 1 });
    expect(runs['setup-fails']).toMatchObject({ failureClass: 'infrastructure', turns: 0 });
    expect(report.totals.byFailureClass).toEqual({ model: 2, tool: 1, policy: 1, verifier: 2, infrastructure: 1 });
  });

  it('exits 1 when a run is not what its task expects', async () => {
    const suite = mkdtempSync(join(tmpdir(), 'kiln-eval-suite-'));
    cpSync(join(ROOT, 'examples', 'eval-failures', 'script-mismatch'), join(suite, 'script-mismatch'), { recursive: true });
    cpSync(join(ROOT, 'examples', 'eval-failures', 'fixtures'), join(suite, 'fixtures'), { recursive: true });
    const taskFile = join(suite, 'script-mismatch', 'task.json');
    const task = JSON.parse(readFileSync(taskFile, 'utf8'));
    writeFileSync(taskFile, JSON.stringify({ ...task, expect: { outcome: 'succeeded' } }));
    const { res, report } = await kilnEval(['--suite', suite]);
    expect(res.exitCode).toBe(1);
    expect(report.runs[0]).toMatchObject({ task: 'script-mismatch', success: false, asExpected: false, failureClass: 'model' });
    expect(res.stdout).toContain('NOT AS EXPECTED');
  });
});
