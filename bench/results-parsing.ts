/**
 * Reading a check's results at the size of a large suite: a pytest JUnit report and the text of
 * several runners, each with N tests, parsed and judged against a base of the same size. The
 * cost must grow linearly: N and 2N are both timed, so the ratio shows it.
 */
import { performance } from 'node:perf_hooks';
import { baselineOf, judgeCheck, type CheckRun } from '../src/checks/judge.js';
import type { Report } from '../src/checks/reports.js';

export interface ResultsRow {
  source: string;
  tests: number;
  bytes: number;
  /** parse and judge against a base of the same shape: median of the runs */
  ms: number;
  /** the same at twice the tests, divided by ms: ~2 is linear */
  doubleRatio: number;
  passed: boolean;
}

function junit(n: number): string {
  const cases: string[] = [];
  for (let i = 0; i < n; i++) cases.push(`<testcase classname="tests.test_m${i % 500}.TestC" name="test_case[${i}]" time="0.001" />`);
  return `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="${n}">${cases.join('')}</testsuite></testsuites>`;
}

const SOURCES: Array<[string, (n: number) => { output: string; reports?: Report[] }]> = [
  [
    'pytest JUnit report',
    (n) => ({ output: `${'.'.repeat(n)}\n=== ${n} passed in 9.00s ===\n`, reports: [{ kind: 'junit-xml', file: 'pytest.xml', text: junit(n) }] }),
  ],
  [
    'pytest -v text',
    (n) => ({
      output: `${Array.from({ length: n }, (_, i) => `tests/test_m${i % 500}.py::TestC::test_case[${i}] PASSED`).join('\n')}\n=== ${n} passed in 9.00s ===\n`,
    }),
  ],
  ['mocha spec text', (n) => ({ output: `\n  suite\n${Array.from({ length: n }, (_, i) => `    ✔ does thing ${i}`).join('\n')}\n\n  ${n} passing (9s)\n` })],
  [
    'node:test TAP',
    (n) => ({ output: `TAP version 13\n${Array.from({ length: n }, (_, i) => `ok ${i + 1} - does thing ${i}`).join('\n')}\n1..${n}\n# pass ${n}\n# fail 0\n` }),
  ],
  [
    'cargo test text',
    (n) => ({
      output: `running ${n} tests\n${Array.from({ length: n }, (_, i) => `test m${i % 500}::t${i} ... ok`).join('\n')}\ntest result: ok. ${n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9s\n`,
    }),
  ],
];

function timeJudge(make: (n: number) => { output: string; reports?: Report[] }, n: number, runs: number): { ms: number; bytes: number; passed: boolean } {
  const { output, reports } = make(n);
  const run: CheckRun = { command: 'check', exitCode: 0, timedOut: false, output, ...(reports ? { reports } : {}) };
  const times: number[] = [];
  let passed = false;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const j = judgeCheck(run, baselineOf(run));
    times.push(performance.now() - t);
    passed = j.passed;
  }
  times.sort((a, b) => a - b);
  const bytes = output.length + (reports ?? []).reduce((s, r) => s + r.text.length, 0);
  return { ms: Math.round(times[Math.floor(times.length / 2)]!), bytes, passed };
}

export function benchResultsParsing(o: { tests: number; runs: number; log: (s: string) => void }): ResultsRow[] {
  const rows: ResultsRow[] = [];
  for (const [source, make] of SOURCES) {
    o.log(`  ${source}: ${o.tests} and ${o.tests * 2} tests`);
    const one = timeJudge(make, o.tests, o.runs);
    const two = timeJudge(make, o.tests * 2, o.runs);
    rows.push({ source, tests: o.tests, bytes: one.bytes, ms: one.ms, doubleRatio: Math.round((two.ms / Math.max(one.ms, 1)) * 10) / 10, passed: one.passed });
  }
  return rows;
}

export function resultsParsingSection(rows: ResultsRow[], heading: (t: string) => string): string[] {
  return [
    heading(`Reading check results: parse the base and the run, and judge (median of runs)`),
    `source                   tests      MB       ms   ×2 tests   verdict`,
    ...rows.map(
      (r) =>
        `${r.source.padEnd(22)} ${String(r.tests).padStart(7)} ${(r.bytes / 1e6).toFixed(1).padStart(7)} ${String(r.ms).padStart(8)}   ${`×${r.doubleRatio}`.padStart(8)}   ${r.passed ? 'pass' : 'FAIL'}`,
    ),
  ];
}
