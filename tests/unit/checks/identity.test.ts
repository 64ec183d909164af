/**
 * Names that cannot be matched: ids that change from run to run, and parses the judge is unsure
 * of. Neither may refuse an honest fix; neither may let a test that stopped running through.
 */
import { describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, type CheckRun } from '../../../src/checks/judge.js';
import { MAX_NAMES } from '../../../src/checks/results/model.js';
import { parseTestOutput } from '../../../src/checks/results/text.js';

const run = (output: string, exitCode = 0): CheckRun => ({ command: 'pytest -v', exitCode, timedOut: false, output });
/** pytest -v lines and the summary */
const pytest = (tests: Array<[string, 'PASSED' | 'FAILED' | 'SKIPPED']>) => {
  const n = (s: string) => tests.filter((t) => t[1] === s).length;
  const counts = [n('FAILED') && `${n('FAILED')} failed`, n('PASSED') && `${n('PASSED')} passed`, n('SKIPPED') && `${n('SKIPPED')} skipped`].filter(Boolean);
  return `${tests.map(([id, s]) => `${id} ${s}`).join('\n')}\n=== ${counts.join(', ')} in 0.10s ===\n`;
};

describe('ids built from the clock, addresses or random values', () => {
  const base = baselineOf(
    run(
      pytest([
        ['t.py::test_plain', 'PASSED'],
        ['t.py::test_at[2026-12-06T05:00:01.123456]', 'FAILED'],
        ['t.py::test_at[2026-12-06T05:00:01.123999]', 'PASSED'],
        ['t.py::test_obj[obj-0x7f3a9c0d1e50]', 'PASSED'],
      ]),
      1,
    ),
  );

  it('do not make a test vanish when the same test has as many cases now, all passing', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_plain', 'PASSED'],
          ['t.py::test_at[2026-12-06T05:07:44.000001]', 'PASSED'],
          ['t.py::test_at[2026-12-06T05:07:44.000730]', 'PASSED'],
          ['t.py::test_obj[obj-0x7f11aa22bb30]', 'PASSED'],
        ]),
      ),
      base,
    );
    expect(j).toMatchObject({ passed: true, findings: [] });
    expect(j.notes.join()).toMatch(/3 test id\(s\) differ from the base only in parts that change/);
    expect(j.notes.join()).not.toMatch(/could not match/);
  });

  it('attack: one case of the failing test deselected fails (its count drops)', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_plain', 'PASSED'],
          ['t.py::test_at[2026-12-06T05:07:44.000730]', 'PASSED'],
          ['t.py::test_obj[obj-0x7f11aa22bb30]', 'PASSED'],
        ]),
      ),
      base,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/fewer tests ran than on the base \(3 < 4\)/);
  });

  it('attack: as many cases, but one fails: not a match, and a failure', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_plain', 'PASSED'],
          ['t.py::test_at[2026-12-06T05:07:44.000001]', 'FAILED'],
          ['t.py::test_at[2026-12-06T05:07:44.000730]', 'PASSED'],
          ['t.py::test_obj[obj-0x7f11aa22bb30]', 'PASSED'],
        ]),
        1,
      ),
      base,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/test\(s\) that ran on the base did not run: t.py::test_at\[2026-12-06T05:00:01.123456\]/);
  });
});

describe('an unsure parse is a note, never a finding', () => {
  const base = baselineOf(
    run(
      pytest([
        ['t.py::test_a', 'PASSED'],
        ['t.py::test_b', 'PASSED'],
        ['t.py::test_fix', 'FAILED'],
      ]),
      1,
    ),
  );

  it('names that do not match while at least as many tests ran, none failed and the exit was 0: a note', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_a', 'PASSED'],
          ['t.py::test_b', 'PASSED'],
          ['t.py::Weird::test_fix', 'PASSED'],
        ]),
      ),
      base,
    );
    expect(j).toMatchObject({ passed: true, findings: [] });
    expect(j.notes.join()).toMatch(/could not match 1 test name\(s\) from the base \(t.py::test_fix\); judged by exit code and counts/);
  });

  it('attack: the fail-to-pass test absent, with fewer tests: a finding', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_a', 'PASSED'],
          ['t.py::test_b', 'PASSED'],
        ]),
      ),
      base,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/fewer tests ran than on the base \(2 < 3\).*did not run: t.py::test_fix/);
  });

  it('attack: the fail-to-pass test absent while a failure remains and the exit is 1: a finding', () => {
    const j = judgeCheck(
      run(
        pytest([
          ['t.py::test_a', 'PASSED'],
          ['t.py::test_b', 'FAILED'],
          ['t.py::test_new', 'PASSED'],
        ]),
        1,
      ),
      base,
    );
    expect(j.findings.join()).toMatch(/did not run: t.py::test_fix/);
  });

  it('a runner that names no test at all, where the base named them, is not unsure: a finding', () => {
    const j = judgeCheck(run('=== 3 passed in 0.10s ===\n'), base);
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/names none of the tests/);
  });

  it('output cut in the middle: names lost there are a note when the counts hold', () => {
    const cut = `t.py::test_a PASSED\n[... kiln: 5000 bytes of output cut (9000 in all); head and tail kept ...]\n=== 3 passed in 0.10s ===\n`;
    const j = judgeCheck(run(cut), base);
    expect(j).toMatchObject({ passed: true, findings: [] });
    expect(j.notes.join()).toMatch(/output was cut in the middle/);
  });
});

describe('size', () => {
  const many = (n: number, last: string) =>
    `running ${n + 1} tests\n${Array.from({ length: n }, (_, i) => `test t${i} ... ok`).join('\n')}\n${last}\ntest result: FAILED. ${n} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s\n`;

  it('a failing test past the name cap is still named', () => {
    const r = parseTestOutput(many(MAX_NAMES + 5, 'test late_failure ... FAILED'));
    expect(r.truncated).toBe(true);
    expect(r.tests['late_failure']).toBe('fail');
    expect(r.passed).toBe(MAX_NAMES + 5);
  });

  it('a passing test past the cap that stops running is caught by the counts', () => {
    const base = baselineOf(run(many(MAX_NAMES + 5, 'test late_failure ... FAILED'), 101));
    const fewer = `running 3 tests\n${Array.from({ length: MAX_NAMES + 4 }, (_, i) => `test t${i} ... ok`).join('\n')}\ntest late_failure ... ok\ntest result: ok. ${MAX_NAMES + 5} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s\n`;
    const j = judgeCheck(run(fewer), base);
    expect(j.findings.join()).toMatch(/fewer tests ran than on the base/);
  });
});

describe('output built to make the parser slow', () => {
  it('many blank lines, and a line of a megabyte of spaces, parse in linear time', () => {
    const t = performance.now();
    parseTestOutput(`${'\n'.repeat(300_000)}--- PASS: TestA (0.00s)\nok  \tpkg\t0.1s\n`);
    parseTestOutput(`ok 1 - a${' '.repeat(1_000_000)}b\n  ✓ c${' \t'.repeat(200_000)}d\n1..1\n# pass 1\n Tests  1 passed (1)\n`);
    // quadratic, the first alone took minutes (40,000 blank lines: 3.5 s)
    expect(performance.now() - t).toBeLessThan(3000);
  });
});
