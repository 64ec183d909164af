/**
 * Per-test results read from a check's printed output, for every runner Kiln knows (TAP and
 * node:test (TAP and spec), vitest, jest, mocha, ava, pytest, unittest, go test, cargo test). Text is the
 * fallback: where a runner also wrote a structured report (reports.ts), that is read first.
 */
import { ava } from './ava.js';
import { libtest } from './libtest.js';
import { mocha } from './mocha.js';
import { nodeSpec } from './node-spec.js';
import { add, collectError, countNames, merge, newResults, type TestResults, type TestStatus } from './model.js';

type Parser = (out: string, r: TestResults) => boolean;

const num = (s: string | undefined) => (s ? Number(s) : 0);
/** A check may run a runner more than once: every summary line counts. */
const sum = (out: string, re: RegExp) => [...out.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);

/**
 * node:test and any TAP producer: "ok 1 - name", "not ok 2 - name # SKIP", "# pass 3". TAP makes
 * the dash optional and tape leaves it out ("ok 1 should be equal"), and tape pads its summary
 * ("# pass  200").
 */
const tap: Parser = (out, r) => {
  const summary = /^# (?:pass|tests)[ \t]+\d+/m.test(out);
  let seen = false;
  // a node:test file reports its own subtests first, then itself as one test: leaves only
  const lines = out.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)(not ok|ok) \d+(?: - | )(.+?)[ \t\r]*$/.exec(lines[i]!);
    if (!m) continue;
    seen = true;
    const indent = m[1]!.length;
    const hasChildren = i > 0 && /^[ \t]*1\.\.\d+[ \t\r]*$/.test(lines[i - 1]!) && lines[i - 1]!.match(/^[ \t]*/)![0].length > indent;
    if (hasChildren) continue;
    let name = m[3]!;
    let status: TestStatus = m[2] === 'ok' ? 'pass' : 'fail';
    const directive = /\s+#\s*(SKIP|TODO)\b.*$/i.exec(name);
    if (directive) {
      name = name.slice(0, directive.index);
      status = 'skip';
    }
    add(r, name, status);
  }
  if (!seen && !summary) return false;
  if (/^# (?:pass|fail)[ \t]+\d+/m.test(out)) {
    r.passed += sum(out, /^# pass[ \t]+(\d+)/gm);
    r.failed += sum(out, /^# fail[ \t]+(\d+)/gm);
    r.skipped += sum(out, /^# (?:skipped|skip|todo)[ \t]+(\d+)/gm);
  } else countNames(r);
  return true;
};

/** vitest: " Tests  2 failed | 3 passed (5)", " FAIL  a.test.ts > suite > name", " ✓ name". */
const vitest: Parser = (out, r) => {
  const summaries = [...out.matchAll(/^[ \t]*Tests[ \t]+([^\n]+?)[ \t]*\(\d+\)[ \t\r]*$/gm)];
  if (!summaries.length) return false;
  for (const [, m] of summaries) {
    r.failed += num(/(\d+) failed/.exec(m!)?.[1]);
    r.passed += num(/(\d+) passed/.exec(m!)?.[1]);
    r.skipped += num(/(\d+) (?:skipped|todo)/.exec(m!)?.[1]);
  }
  for (const f of out.matchAll(/^[ \t]*FAIL\s+(\S+\.(?:test|spec)\.\S+ > .+?)[ \t\r]*$/gm)) add(r, f[1]!, 'fail');
  for (const f of out.matchAll(/^[ \t]*[×✗✕]\s+(.+?)(?:\s+\d+(?:\.\d+)?\s?ms)?[ \t\r]*$/gm)) add(r, f[1]!, 'fail');
  let collapsed = 0;
  for (const f of out.matchAll(/^[ \t]*[✓✔]\s+(.+?)(?:\s+\d+(?:\.\d+)?\s?ms)?[ \t\r]*$/gm)) {
    if (/\(\d+ tests?\)/.test(f[1]!)) collapsed++;
    else add(r, f[1]!, 'pass');
  }
  // the default reporter lists a file's tests only when one of them fails: a passing file is one line
  if (collapsed) (r.doubts ??= []).push(`vitest listed ${collapsed} passing file(s) as one line each, not their tests`);
  return true;
};

/** jest: "Tests:       1 failed, 3 passed, 4 total", "● suite › name", "✓ name (3 ms)". */
const jest: Parser = (out, r) => {
  const summaries = [...out.matchAll(/^Tests:[ \t]+([^\n]+)$/gm)];
  if (!summaries.length) return false;
  for (const [, m] of summaries) {
    r.failed += num(/(\d+) failed/.exec(m!)?.[1]);
    r.passed += num(/(\d+) passed/.exec(m!)?.[1]);
    r.skipped += num(/(\d+) (?:skipped|todo)/.exec(m!)?.[1]);
  }
  for (const f of out.matchAll(/^[ \t]*● (.+? › .+?)[ \t\r]*$/gm)) add(r, f[1]!, 'fail');
  for (const f of out.matchAll(/^[ \t]*[✓✔]\s+(.+?)(?:\s+\(\d+ ms\))?[ \t\r]*$/gm)) add(r, f[1]!, 'pass');
  for (const f of out.matchAll(/^[ \t]*[✕×]\s+(.+?)(?:\s+\(\d+ ms\))?[ \t\r]*$/gm)) add(r, f[1]!, 'fail');
  return true;
};

/** pytest: "=== 1 failed, 3 passed in 0.1s ===", "FAILED t.py::test_b - …", "PASSED t.py::test_a" (-rA). */
const pytest: Parser = (out, r) => {
  // "=== 1 failed, 3 passed in 0.1s ===", or bare at -q: "1 failed, 3 passed in 0.10s"
  const summaries = [
    ...out.matchAll(
      /^(?:=+ )?((?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)]*\))?(?: =+)?[ \t\r]*$/gm,
    ),
  ];
  if (!summaries.length) return false;
  for (const [, m] of summaries) {
    r.failed += num(/(\d+) failed/.exec(m!)?.[1]) + num(/(\d+) errors?/.exec(m!)?.[1]);
    r.passed += num(/(\d+) passed/.exec(m!)?.[1]) + num(/(\d+) xpassed/.exec(m!)?.[1]);
    r.skipped += num(/(\d+) (?:skipped|xfailed|deselected)/.exec(m!)?.[1]);
  }
  // "ERROR tests/test_x.py" (no test id): the module could not be collected
  for (const f of out.matchAll(/^ERROR (\S+\.py)(?: - .*)?[ \t\r]*$/gm)) collectError(r, f[1]!);
  for (const f of out.matchAll(/^(FAILED|ERROR|PASSED|SKIPPED|XFAIL) (\S+::\S+)/gm))
    add(r, f[2]!, f[1] === 'PASSED' ? 'pass' : f[1] === 'FAILED' || f[1] === 'ERROR' ? 'fail' : 'skip');
  for (const f of out.matchAll(/^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED)\b/gm))
    add(r, f[1]!, f[2] === 'PASSED' ? 'pass' : f[2] === 'SKIPPED' ? 'skip' : 'fail');
  return true;
};

/** go test: "--- FAIL: TestX (0.00s)", "--- PASS: TestX" (-v), "ok  pkg", "FAIL\tpkg". */
const goTest: Parser = (out, r) => {
  const results = [...out.matchAll(/^[ \t]*--- (PASS|FAIL|SKIP): (\S+)/gm)];
  const pkgs = [...out.matchAll(/^(ok|FAIL|\?) *\t\S+/gm)];
  if (!results.length && !pkgs.some((p) => p[1] === 'ok' || /^FAIL\t/.test(p[0]))) return false;
  for (const f of results) add(r, f[2]!, f[1] === 'PASS' ? 'pass' : f[1] === 'FAIL' ? 'fail' : 'skip');
  const all = results.map((f) => f[1]);
  r.passed += all.filter((s) => s === 'PASS').length;
  r.failed += all.filter((s) => s === 'FAIL').length;
  r.skipped += all.filter((s) => s === 'SKIP').length;
  // a package that failed to build reports no test at all: it is still a failure
  for (const p of out.matchAll(/^FAIL\t(\S+) \[(?:build|setup) failed\]/gm)) {
    add(r, `${p[1]} [build failed]`, 'fail');
    r.failed += 1;
  }
  return true;
};

/**
 * unittest: "Ran 4 tests in 0.001s", then "OK" or "FAILED (failures=1, errors=1, skipped=1)"; with
 * -v each test's line "test_x (mod.Class.test_x) ... ok|FAIL|ERROR|skipped …"; "FAIL: test_x (mod.Class)".
 */
const unittest: Parser = (out, r) => {
  const runs = [...out.matchAll(/^Ran (\d+) tests? in [\d.]+s[ \t\r]*$/gm)];
  if (!runs.length) return false;
  for (const ran of runs) {
    const after = /^(OK|FAILED)(?: \(([^)]*)\))?[ \t\r]*$/gm;
    after.lastIndex = ran.index;
    const verdict = after.exec(out);
    const counts = verdict?.[2] ?? '';
    const failed = num(/failures=(\d+)/.exec(counts)?.[1]) + num(/errors=(\d+)/.exec(counts)?.[1]) + num(/unexpected successes=(\d+)/.exec(counts)?.[1]);
    const skipped = num(/skipped=(\d+)/.exec(counts)?.[1]) + num(/expected failures=(\d+)/.exec(counts)?.[1]);
    r.failed += failed;
    r.skipped += skipped;
    r.passed += Math.max(0, Number(ran[1]) - failed - skipped);
  }
  for (const f of out.matchAll(/^(test\w*) \(([\w.]+?)\) \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)/gm)) {
    const name = f[2]!.endsWith(`.${f[1]}`) ? f[2]! : `${f[2]}.${f[1]}`;
    add(r, name, f[3] === 'ok' ? 'pass' : f[3] === 'skipped' || f[3] === 'expected failure' ? 'skip' : 'fail');
  }
  for (const f of out.matchAll(/^(?:FAIL|ERROR): (test\w*) \(([\w.]+?)\)/gm)) {
    const name = f[2]!.endsWith(`.${f[1]}`) ? f[2]! : `${f[2]}.${f[1]}`;
    add(r, name, 'fail');
  }
  return true;
};

const PARSERS: Array<[string, Parser]> = [
  ['go test', goTest],
  ['unittest', unittest],
  ['pytest', pytest],
  ['jest', jest],
  ['vitest', vitest],
  ['mocha', mocha],
  ['ava', ava],
  ['cargo test', libtest],
  ['tap', tap],
  ['node:test spec', nodeSpec],
];

// eslint-disable-next-line no-control-regex -- ANSI colour codes are exactly what this strips
const ANSI = /\x1b\[[0-9;]*m/g;

/** Each recognised runner's results on its own, so a report can stand in for one runner's. */
export function parseEach(output: string): Array<[string, TestResults]> {
  // a long run of blanks costs the patterns time for each position they try in it: kept short,
  // every parse is linear in the output (indentation stays: no runner nests 32 levels)
  const text = output.replace(ANSI, '').replace(/[ \t\r]{65,}/g, (run) => run.slice(0, 64));
  const parts: Array<[string, TestResults]> = [];
  for (const [name, parse] of PARSERS) {
    const r = newResults();
    if (parse(text, r)) parts.push([name, r]);
  }
  return parts;
}

export function parseTestOutput(output: string): TestResults {
  return merge(parseEach(output));
}
