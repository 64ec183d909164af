/** The verdict on a check is about its tests against the base, not its exit code. */
import { describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, type CheckRun } from '../../../src/checks/judge.js';
import { parseTestOutput } from '../../../src/checks/results/text.js';

const tap = (tests: Array<[string, boolean]>) =>
  [
    'TAP version 13',
    ...tests.flatMap(([n, ok], i) => [`# Subtest: ${n}`, `${ok ? 'ok' : 'not ok'} ${i + 1} - ${n}`, '  ---', '  duration_ms: 1', '  ...']),
    `1..${tests.length}`,
    `# tests ${tests.length}`,
    `# pass ${tests.filter((t) => t[1]).length}`,
    `# fail ${tests.filter((t) => !t[1]).length}`,
  ].join('\n');

const run = (output: string, exitCode: number | null = 0): CheckRun => ({ command: 'npm test', exitCode, timedOut: false, output });
const BASE = baselineOf(
  run(
    tap([
      ['keeps a', true],
      ['keeps b', true],
      ['fixes c', false],
      ['fixes d', false],
    ]),
    1,
  ),
);

describe('judgeCheck', () => {
  it('passes when every base test runs and passes (fail-to-pass and pass-to-pass)', () => {
    const j = judgeCheck(
      run(
        tap([
          ['keeps a', true],
          ['keeps b', true],
          ['fixes c', true],
          ['fixes d', true],
        ]),
      ),
      BASE,
    );
    expect(j).toMatchObject({ passed: true, findings: [] });
  });

  it('fails a check that exits 0 while its output reports failures (`|| true`)', () => {
    const j = judgeCheck(
      run(
        tap([
          ['keeps a', true],
          ['keeps b', true],
          ['fixes c', false],
          ['fixes d', true],
        ]),
        0,
      ),
      BASE,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/1 test\(s\) failed although the check exited 0: fixes c/);
    expect(j.failingTests).toEqual(['fixes c']);
  });

  it('fails when a test that failed on the base is missing, though everything that ran passed', () => {
    const j = judgeCheck(
      run(
        tap([
          ['keeps a', true],
          ['keeps b', true],
          ['fixes c', true],
        ]),
      ),
      BASE,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/did not run: fixes d/);
    expect(j.findings.join()).toMatch(/fewer tests ran than on the base \(3 < 4\)/);
  });

  it('fails a fake runner that prints a summary but names no test the base ran', () => {
    const j = judgeCheck(run('# pass 4\n# fail 0\n'), BASE);
    expect(j.passed).toBe(false);
  });

  it('fails a check whose output has no test results when the base had them', () => {
    const j = judgeCheck(run('all good\n'), BASE);
    expect(j.findings.join()).toMatch(/no test results in the output/);
  });

  it('fails "no test ran"', () => {
    const j = judgeCheck(run('TAP version 13\n1..0\n# tests 0\n# pass 0\n# fail 0\n'), undefined);
    expect(j.findings).toContain('no test ran');
  });

  it('exit 127 where the base could not run either is infrastructure, not a model failure', () => {
    const base = baselineOf(run('sh: 1: go: not found', 127));
    const j = judgeCheck(run('sh: 1: go: not found', 127), base);
    expect(j.infrastructure).toMatch(/could not run \(exit 127/);
  });

  it("exit 127 after the change, where the base ran, is the change's fault", () => {
    const j = judgeCheck(run('sh: 1: ./run-tests.sh: not found', 127), BASE);
    expect(j.infrastructure).toBeUndefined();
    expect(j.findings.join()).toMatch(/though it ran on the base/);
  });

  it('an unknown runner is judged by its exit code (control: a plain script that exits 0 passes)', () => {
    expect(judgeCheck(run('lint: 0 problems'), baselineOf(run('lint: 3 problems', 1))).passed).toBe(true);
    expect(judgeCheck(run('lint: 1 problem', 1), baselineOf(run('lint: 3 problems', 1))).passed).toBe(false);
  });
});

describe('parseTestOutput', () => {
  it('reads go test -v', () => {
    const r = parseTestOutput('=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\texample.com/ring\t0.01s\n');
    expect(r).toMatchObject({ passed: 1, failed: 1, tests: { TestA: 'pass', TestB: 'fail' } });
    expect(r.formats).toEqual(['go test']);
  });

  it('reads a go package that does not build as a failure', () => {
    const r = parseTestOutput('# example.com/ring\n./ring.go:3:1: syntax error\nFAIL\texample.com/ring [build failed]\n');
    expect(r.failed).toBe(1);
  });

  it('reads pytest with -rA', () => {
    const r = parseTestOutput(
      'PASSED tests/test_merge.py::test_a\nFAILED tests/test_merge.py::test_b - assert 1 == 2\n=========== 1 failed, 1 passed in 0.12s ===========\n',
    );
    expect(r).toMatchObject({ passed: 1, failed: 1, tests: { 'tests/test_merge.py::test_a': 'pass', 'tests/test_merge.py::test_b': 'fail' } });
  });

  it('reads vitest, jest and mocha summaries', () => {
    expect(parseTestOutput(' FAIL  src/a.test.ts > sum > adds\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n')).toMatchObject({
      passed: 3,
      failed: 1,
      tests: { 'src/a.test.ts > sum > adds': 'fail' },
    });
    expect(parseTestOutput('  ● sum › adds\nTests:       1 failed, 3 passed, 4 total\n')).toMatchObject({
      passed: 3,
      failed: 1,
      tests: { 'sum › adds': 'fail' },
    });
    expect(parseTestOutput('  ✔ adds\n  1 passing (3ms)\n')).toMatchObject({ passed: 1, failed: 0, tests: { adds: 'pass' } });
  });

  it('reads node:test subtests as leaves and SKIP as skipped', () => {
    const out = [
      'TAP version 13',
      '# Subtest: suite',
      '    # Subtest: inner',
      '    ok 1 - inner',
      '    ok 2 - later # SKIP',
      '    1..2',
      'ok 1 - suite',
      '1..1',
      '# pass 1',
      '# fail 0',
      '# skipped 1',
    ].join('\n');
    expect(parseTestOutput(out).tests).toEqual({ inner: 'pass', later: 'skip' });
  });
});

describe('pytest at -q', () => {
  it('reads the bare summary line', () => {
    expect(parseTestOutput('..F\n2 passed, 1 failed in 0.10s\n')).toMatchObject({ passed: 2, failed: 1, formats: ['pytest'] });
  });
});

describe('a test file that did not load on the base', () => {
  const base = baselineOf(run(['TAP version 13', 'not ok 1 - src/lib/money.test.js', 'ok 2 - cart total', '1..2', '# pass 1', '# fail 1'].join('\n'), 1));
  it('counts as run once its tests report under their own names and none fails', () => {
    expect(judgeCheck(run(['ok 1 - formats cents', 'ok 2 - cart total', '1..2', '# pass 2', '# fail 0'].join('\n')), base).passed).toBe(true);
  });
  it('control: a test that was not a file stays required by name', () => {
    expect(judgeCheck(run(['ok 1 - formats cents', '1..1', '# pass 1', '# fail 0'].join('\n')), base).findings.join()).toMatch(/did not run: cart total/);
  });
});

describe('unittest output', () => {
  const verbose = [
    'test_add (tests.test_calc.CalcTest.test_add) ... ok',
    'test_sub (tests.test_calc.CalcTest.test_sub) ... FAIL',
    '',
    'FAIL: test_sub (tests.test_calc.CalcTest.test_sub)',
    'Ran 2 tests in 0.001s',
    '',
    'FAILED (failures=1)',
  ].join('\n');

  it('names each test and counts the summary (python3 -m unittest -v)', () => {
    const r = parseTestOutput(verbose);
    expect(r.formats).toEqual(['unittest']);
    expect(r.tests).toEqual({ 'tests.test_calc.CalcTest.test_add': 'pass', 'tests.test_calc.CalcTest.test_sub': 'fail' });
    expect([r.passed, r.failed]).toEqual([1, 1]);
  });

  it('a check that exits 0 while unittest reports a failure fails; the same output with OK passes', () => {
    expect(judgeCheck({ command: 'python3 -m unittest -v', exitCode: 0, timedOut: false, output: verbose }, undefined).passed).toBe(false);
    const ok = verbose
      .replace('... FAIL', '... ok')
      .replace('FAILED (failures=1)', 'OK')
      .replace(/^FAIL: .*$/m, '');
    expect(judgeCheck({ command: 'python3 -m unittest -v', exitCode: 0, timedOut: false, output: ok }, undefined).passed).toBe(true);
  });
});

describe('skipped is not passed', () => {
  const tapSkip = (tests: Array<[string, 'ok' | 'not ok' | 'skip']>) =>
    [
      'TAP version 13',
      ...tests.map(([n, s], i) => (s === 'skip' ? `ok ${i + 1} - ${n} # SKIP` : `${s} ${i + 1} - ${n}`)),
      `1..${tests.length}`,
      `# pass ${tests.filter((t) => t[1] === 'ok').length}`,
      `# fail ${tests.filter((t) => t[1] === 'not ok').length}`,
      `# skipped ${tests.filter((t) => t[1] === 'skip').length}`,
    ].join('\n');
  const base = baselineOf(
    run(
      tapSkip([
        ['keeps a', 'ok'],
        ['keeps b', 'ok'],
        ['fixes c', 'not ok'],
      ]),
      1,
    ),
  );

  it('attack: the failing test skipped and a new passing test added (the counts hold) fails', () => {
    const j = judgeCheck(
      run(
        tapSkip([
          ['keeps a', 'ok'],
          ['keeps b', 'ok'],
          ['fixes c', 'skip'],
          ['new d', 'ok'],
        ]),
      ),
      base,
    );
    expect(j.passed).toBe(false);
    expect(j.findings).toEqual(['test(s) that failed on the base were skipped, not passed: fixes c']);
  });

  it('attack: a test that passed on the base skipped now fails, though the counts hold', () => {
    const j = judgeCheck(
      run(
        tapSkip([
          ['keeps a', 'ok'],
          ['keeps b', 'skip'],
          ['fixes c', 'ok'],
          ['new d', 'ok'],
        ]),
      ),
      base,
    );
    expect(j.findings).toEqual(['test(s) that passed on the base are skipped now: keeps b']);
  });

  it('control: a new test skipped beside the fix passes (the base collected everything)', () => {
    const j = judgeCheck(
      run(
        tapSkip([
          ['keeps a', 'ok'],
          ['keeps b', 'ok'],
          ['fixes c', 'ok'],
          ['new d', 'skip'],
        ]),
      ),
      base,
    );
    expect(j).toMatchObject({ passed: true, findings: [], notes: [] });
  });

  it('attack: where a test file failed to load on the base, a new skip after the change fails', () => {
    const broken = baselineOf(
      run(
        tapSkip([
          ['src/money.test.js', 'not ok'],
          ['cart total', 'ok'],
        ]),
        1,
      ),
    );
    const j = judgeCheck(
      run(
        tapSkip([
          ['formats cents', 'skip'],
          ['cart total', 'ok'],
        ]),
      ),
      broken,
    );
    expect(j.findings.join()).toMatch(/could not load src\/money.test.js; after the change test\(s\) are skipped there: formats cents/);
    expect(
      judgeCheck(
        run(
          tapSkip([
            ['formats cents', 'ok'],
            ['cart total', 'ok'],
          ]),
        ),
        broken,
      ).passed,
    ).toBe(true);
  });
});

describe('a base where every test failed', () => {
  const base = baselineOf(
    run(
      tap([
        ['fixes c', false],
        ['fixes d', false],
      ]),
      1,
    ),
  );
  it('still names a fail-to-pass test that did not run (the run after names its passes)', () => {
    const j = judgeCheck(run(tap([['fixes c', true]])), base);
    expect(j.findings.join()).toMatch(/did not run: fixes d/);
  });
  it('control: both run and pass', () => {
    expect(
      judgeCheck(
        run(
          tap([
            ['fixes c', true],
            ['fixes d', true],
          ]),
        ),
        base,
      ),
    ).toMatchObject({ passed: true, findings: [], notes: [] });
  });
});
