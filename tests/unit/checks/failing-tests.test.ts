import { describe, expect, it } from 'vitest';
import { failingTests } from '../../../src/checks/failing-tests.js';

describe('failing test names from runner output', () => {
  it('node:test (TAP)', () => {
    const out =
      'TAP version 13\nok 1 - returns the session\nnot ok 2 - should reject revoked session\n  ---\n  duration_ms: 1.2\n  ...\n1..2\n# pass 1\n# fail 1\n';
    expect(failingTests(out)).toEqual(['should reject revoked session']);
  });

  it('vitest', () => {
    const out = [
      ' ❯ src/auth.test.ts (3 tests | 1 failed) 12ms',
      '   × auth > rejects an expired token 5ms',
      '   ✓ auth > accepts a fresh token',
      ' FAIL  src/auth.test.ts > auth > rejects an expired token',
      'AssertionError: expected true to be false',
      ' Test Files  1 failed (1)',
    ].join('\n');
    expect(failingTests(out)).toEqual(expect.arrayContaining(['auth > rejects an expired token', 'src/auth.test.ts > auth > rejects an expired token']));
  });

  it('jest', () => {
    const out =
      ' FAIL  src/order.test.js\n  order service\n    ✓ creates an order (3 ms)\n    ✕ cancels only pending orders (5 ms)\n\n  ● order service › cancels only pending orders\n';
    expect(failingTests(out)).toEqual(expect.arrayContaining(['src/order.test.js', 'cancels only pending orders']));
  });

  it('mocha: the full title, not the describe block that opens the failure header', () => {
    const out =
      '  order\n    ✓ creates\n    1) cancels only pending orders\n\n  1 passing (8ms)\n  1 failing\n\n  1) order\n       cancels only pending orders:\n     AssertionError';
    expect(failingTests(out)).toEqual(['order cancels only pending orders']);
  });

  it('pytest', () => {
    const out =
      '=========================== short test summary info ============================\nFAILED tests/test_session.py::test_revoked - AssertionError: assert 1 == 0\n========================= 1 failed, 3 passed in 0.05s =========================';
    expect(failingTests(out)).toEqual(['tests/test_session.py::test_revoked']);
  });

  it('go test', () => {
    const out = '=== RUN   TestRevoked\n--- FAIL: TestRevoked (0.00s)\n    session_test.go:12: got session, want nil\nFAIL\nFAIL\texample.com/session\t0.003s';
    expect(failingTests(out)).toEqual(['TestRevoked']);
  });

  it('passing output and unknown formats give no names', () => {
    expect(failingTests('ok 1 - a\n# pass 1\n# fail 0\n')).toEqual([]);
    expect(failingTests('Build succeeded.\n')).toEqual([]);
  });
});

describe('unittest names its failing tests, not "(failures=2)"', () => {
  it('FAIL and ERROR headers of python3 -m unittest -v', () => {
    const out = [
      'test_add (test_calc.CalcTest.test_add) ... FAIL',
      'test_div (test_calc.CalcTest.test_div) ... ERROR',
      'test_sub (test_calc.CalcTest.test_sub) ... ok',
      '',
      '======================================================================',
      'ERROR: test_div (test_calc.CalcTest.test_div)',
      '----------------------------------------------------------------------',
      'ZeroDivisionError: division by zero',
      '',
      '======================================================================',
      'FAIL: test_add (test_calc.CalcTest.test_add)',
      '----------------------------------------------------------------------',
      'AssertionError: -1 != 5',
      '',
      'Ran 3 tests in 0.001s',
      '',
      'FAILED (failures=1, errors=1)',
    ].join('\n');
    expect(failingTests(out).sort()).toEqual(['test_add (test_calc.CalcTest.test_add)', 'test_div (test_calc.CalcTest.test_div)']);
  });

  it('a passing unittest run names none', () => {
    expect(failingTests('test_add (test_calc.CalcTest.test_add) ... ok\n\nRan 1 test in 0.000s\n\nOK\n')).toEqual([]);
  });
});
