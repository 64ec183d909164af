/**
 * Names of failing tests, read from the output of common runners (vitest, jest, node:test,
 * mocha, pytest, go test, unittest). Unknown formats give an empty list; the verdict then carries the tail.
 * mocha's are its parser's (full titles from the listing): a pattern over its failure summary
 * takes the first line of a multi-line header, a describe block's title, for a test.
 */
import { mocha } from './results/mocha.js';
import { newResults } from './results/model.js';

const PATTERNS: RegExp[] = [
  // vitest / jest: " FAIL  src/a.test.ts > suite > name" (a test file, not go's "FAIL\tpkg") and " × name"
  /^[ \t]*FAIL {1,2}(\S*(?:\.test\.|\.spec\.|__tests__)\S*(?: > .+?)?)[ \t\r]*$/gm,
  /^[ \t]*[×✗✕]\s+(.+?)(?:\s+\(?\d+(?:\.\d+)?\s?m?s\)?)?[ \t\r]*$/gm,
  // node:test TAP: "not ok 3 - name"
  /^[ \t]*not ok \d+ - (.+?)[ \t\r]*$/gm,
  // pytest: "FAILED tests/test_a.py::test_b - AssertionError" (not unittest's "FAILED (failures=2)")
  /^FAILED ([^\s(]\S*)/gm,
  // go test: "--- FAIL: TestName (0.00s)"
  /^[ \t]*--- FAIL: (\S+)/gm,
  // unittest: "FAIL: test_add (test_calc.CalcTest.test_add)" and "ERROR: ..." headers
  /^(?:FAIL|ERROR): (\w+ \([\w.]+\))[ \t\r]*$/gm,
];

const MAX_NAMES = 50;

export function failingTests(output: string): string[] {
  const names = new Set<string>();
  const m = newResults();
  if (mocha(output, m)) for (const n in m.tests) if (m.tests[n] === 'fail') names.add(n);
  for (const re of PATTERNS) {
    for (const m of output.matchAll(re)) {
      const name = m[1]!.replace(/\s+\[\d+(?:\.\d+)?m?s\]$/, '').trim();
      if (name && !/^\d+ (passed|failed)/.test(name)) names.add(name.slice(0, 200));
      if (names.size >= MAX_NAMES) return [...names];
    }
  }
  return [...names];
}
