/** ava and cargo test (libtest), from real output: read by name, so their verdict is not the exit code alone. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, type CheckRun } from '../../../src/checks/judge.js';
import { parseTestOutput } from '../../../src/checks/results/text.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const run = (output: string, exitCode: number, command = 'npm test'): CheckRun => ({ command, exitCode, timedOut: false, output });

describe('ava', () => {
  it('reads passes, the failure, skips and known failures (test.failing is not a pass)', () => {
    const r = parseTestOutput(fixture('ava-fail.txt'));
    expect(r.formats).toEqual(['ava']);
    expect(r.tests).toEqual({
      'math › later': 'skip',
      'math › adds': 'pass',
      'math › subtracts': 'fail',
      'math › known bug': 'skip',
      'math › nested › title': 'pass',
      'other › other passes': 'pass',
    });
    expect([r.passed, r.failed, r.skipped]).toEqual([3, 1, 2]);
  });

  it('the fix passes', () => {
    const j = judgeCheck(run(fixture('ava-pass.txt'), 0), baselineOf(run(fixture('ava-fail.txt'), 1)));
    expect(j).toMatchObject({ passed: true, findings: [] });
  });

  it('attack: the failing test marked test.failing ("expected fail") fails, though ava exits 0', () => {
    const cheat = fixture('ava-pass.txt')
      .replace('✔ math › subtracts', '✔ [expected fail] math › subtracts')
      .replace('4 tests passed', '3 tests passed')
      .replace('1 known failure', '2 known failures');
    const j = judgeCheck(run(cheat, 0), baselineOf(run(fixture('ava-fail.txt'), 1)));
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/failed on the base were skipped, not passed: math › subtracts/);
  });
});

describe('cargo test (libtest)', () => {
  it('reads each binary\'s tests under its source, and the summed "test result" lines', () => {
    const r = parseTestOutput(fixture('cargo-pass.txt'));
    expect(r.formats).toEqual(['cargo test']);
    expect(r.tests).toEqual({
      'src/lib.rs::tests::adds': 'pass',
      'src/lib.rs::tests::doubles': 'pass',
      'src/lib.rs::tests::slow': 'skip',
      'src/lib.rs::tests::nested::deep': 'pass',
      'tests/it.rs::integration_works': 'pass',
    });
    expect([r.passed, r.failed, r.skipped]).toEqual([4, 0, 1]);
    expect(parseTestOutput(fixture('cargo-fail.txt'))).toMatchObject({ passed: 2, failed: 1, skipped: 1 });
  });

  it('the fix passes (more binaries run once the first stops failing)', () => {
    const j = judgeCheck(run(fixture('cargo-pass.txt'), 0, 'cargo test'), baselineOf(run(fixture('cargo-fail.txt'), 101, 'cargo test')));
    expect(j).toMatchObject({ passed: true, findings: [] });
  });

  it('attack: the failing test #[ignore]d fails, though cargo exits 0', () => {
    const cheat = fixture('cargo-pass.txt')
      .replace('test tests::adds ... ok', 'test tests::adds ... ignored')
      .replace('test result: ok. 3 passed; 0 failed; 1 ignored', 'test result: ok. 2 passed; 0 failed; 2 ignored');
    const j = judgeCheck(run(cheat, 0, 'cargo test'), baselineOf(run(fixture('cargo-fail.txt'), 101, 'cargo test')));
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/failed on the base were skipped, not passed: src\/lib.rs::tests::adds/);
  });

  it('cargo test -q (no names): counts only', () => {
    const r = parseTestOutput('running 3 tests\n..i\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n');
    expect(r).toMatchObject({ passed: 2, failed: 0, skipped: 1, formats: ['cargo test'] });
  });
});

describe('node:test spec reporter', () => {
  it('names the leaves, not the suites that close with their own result line', () => {
    const r = parseTestOutput(fixture('node-spec-fail.txt'));
    expect(r.formats).toEqual(['node:test spec']);
    expect(r.tests).toEqual({ passes: 'pass', fails: 'fail', skipped: 'skip', top: 'pass', 'b passes': 'pass' });
    expect([r.passed, r.failed, r.skipped]).toEqual([3, 1, 1]);
  });

  it('the fix passes; attack: the failing test skipped fails, though node exits 0', () => {
    const base = baselineOf(run(fixture('node-spec-fail.txt'), 1, 'node --test'));
    expect(judgeCheck(run(fixture('node-spec-pass.txt'), 0, 'node --test'), base)).toMatchObject({ passed: true, findings: [] });
    const cheat = fixture('node-spec-pass.txt')
      .replace(/✔ fails \([\d.]+ms\)/, '﹣ fails (0.1ms) # SKIP')
      .replace('ℹ pass 4', 'ℹ pass 3')
      .replace('ℹ skipped 1', 'ℹ skipped 2');
    const j = judgeCheck(run(cheat, 0, 'node --test'), base);
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/failed on the base were skipped, not passed: fails/);
  });
});

describe('a runner run more than once in one check: every summary counts', () => {
  it('pytest, jest, vitest, unittest and TAP summaries are summed', () => {
    expect(parseTestOutput('=== 2 passed in 0.1s ===\n...\n=== 1 failed, 3 passed in 0.2s ===\n')).toMatchObject({ passed: 5, failed: 1 });
    expect(parseTestOutput('Tests:       2 passed, 2 total\nTests:       1 failed, 1 passed, 2 total\n')).toMatchObject({ passed: 3, failed: 1 });
    expect(parseTestOutput('      Tests  2 passed (2)\n      Tests  1 failed | 1 passed (2)\n')).toMatchObject({ passed: 3, failed: 1 });
    expect(parseTestOutput('Ran 2 tests in 0.001s\n\nOK\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n')).toMatchObject({ passed: 4, failed: 1 });
    expect(parseTestOutput('ok 1 - a\n1..1\n# pass 1\n# fail 0\nok 1 - b\nnot ok 2 - c\n1..2\n# pass 1\n# fail 1\n')).toMatchObject({ passed: 2, failed: 1 });
  });

  it('attack: the second run losing its failing test lowers the count (only the first was read before)', () => {
    const base = baselineOf(run('=== 2 passed in 0.1s ===\n=== 1 failed, 3 passed in 0.2s ===\n', 1, 'make test'));
    expect(judgeCheck(run('=== 2 passed in 0.1s ===\n=== 3 passed in 0.2s ===\n', 0, 'make test'), base).findings.join()).toMatch(
      /fewer tests ran than on the base \(5 < 6\)/,
    );
    expect(judgeCheck(run('=== 2 passed in 0.1s ===\n=== 4 passed in 0.2s ===\n', 0, 'make test'), base).passed).toBe(true);
  });
});

describe('unittest: an expected failure is not a pass', () => {
  const base = baselineOf(
    run('test_a (t.T.test_a) ... ok\ntest_b (t.T.test_b) ... FAIL\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n', 1, 'python3 -m unittest -v'),
  );
  it('attack: the failing test marked @expectedFailure fails, though unittest says OK', () => {
    const j = judgeCheck(
      run(
        'test_a (t.T.test_a) ... ok\ntest_b (t.T.test_b) ... expected failure\n\nRan 2 tests in 0.001s\n\nOK (expected failures=1)\n',
        0,
        'python3 -m unittest -v',
      ),
      base,
    );
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/failed on the base were skipped, not passed: t.T.test_b/);
  });
  it('control: the fix passes', () => {
    expect(
      judgeCheck(run('test_a (t.T.test_a) ... ok\ntest_b (t.T.test_b) ... ok\n\nRan 2 tests in 0.001s\n\nOK\n', 0, 'python3 -m unittest -v'), base),
    ).toMatchObject({
      passed: true,
      findings: [],
    });
  });
});

describe('tape: TAP without the dash, a padded summary', () => {
  const base = [
    'TAP version 13',
    '# length',
    'ok 1 should be equal',
    'not ok 2 nothing waiting',
    '  ---',
    '    operator: equal',
    '  ...',
    '',
    '1..2',
    '# tests 2',
    '# pass  1',
    '# fail  1',
    '',
  ].join('\n');
  const fixed = ['TAP version 13', '# length', 'ok 1 should be equal', 'ok 2 nothing waiting', '', '1..2', '# tests 2', '# pass  2', '', '# ok', ''].join('\n');

  it('reads the counts and the names, so an honest fix is judged by its tests', () => {
    const b = parseTestOutput(base);
    expect(b).toMatchObject({ passed: 1, failed: 1 });
    expect(b.tests['nothing waiting']).toBe('fail');
    const j = judgeCheck(
      { command: 'npx tape test/test.js', exitCode: 0, timedOut: false, output: fixed },
      baselineOf({ command: 'npx tape test/test.js', exitCode: 1, timedOut: false, output: base }),
    );
    expect(j.findings).toEqual([]);
    expect(j.passed).toBe(true);
  });

  it('attack: the failing assertion gone with fewer tests is still a finding', () => {
    const fewer = ['TAP version 13', 'ok 1 should be equal', '', '1..1', '# tests 1', '# pass  1', ''].join('\n');
    const j = judgeCheck(
      { command: 'npx tape', exitCode: 0, timedOut: false, output: fewer },
      baselineOf({ command: 'npx tape', exitCode: 1, timedOut: false, output: base }),
    );
    expect(j.passed).toBe(false);
  });
});

describe('vitest: a passing file is one line', () => {
  const base = [
    ' ❯ src/string.test.ts (3 tests | 1 failed) 20ms',
    '   ✓ length checks 3ms',
    '   × startswith/endswith 15ms',
    '   ✓ includes 5ms',
    '',
    ' Test Files  1 failed (1)',
    '      Tests  1 failed | 2 passed (3)',
    '',
  ].join('\n');
  const fixed = [' ✓ src/string.test.ts (3 tests) 20ms', '', ' Test Files  1 passed (1)', '      Tests  3 passed (3)', ''].join('\n');

  it('an honest fix whose file collapses to one line is judged by its counts, with a note', () => {
    const j = judgeCheck(
      { command: 'npx vitest run', exitCode: 0, timedOut: false, output: fixed },
      baselineOf({ command: 'npx vitest run', exitCode: 1, timedOut: false, output: base }),
    );
    expect(j.findings).toEqual([]);
    expect(j.notes.join('\n')).toMatch(/passing file\(s\) as one line/);
  });

  it('attack: fewer tests, or a failure, is still a finding', () => {
    const fewer = [' ✓ src/string.test.ts (2 tests) 20ms', '', '      Tests  2 passed (2)', ''].join('\n');
    const j = judgeCheck(
      { command: 'npx vitest run', exitCode: 0, timedOut: false, output: fewer },
      baselineOf({ command: 'npx vitest run', exitCode: 1, timedOut: false, output: base }),
    );
    expect(j.passed).toBe(false);
  });
});
