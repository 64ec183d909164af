/** mocha's reporters, from real output: a failing test two describes deep, a pending one. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, type CheckRun } from '../../../src/checks/judge.js';
import { parseTestOutput } from '../../../src/checks/results/text.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const run = (output: string, exitCode: number): CheckRun => ({ command: 'npm test', exitCode, timedOut: false, output });

const FULL = 'Test byte format function with options Should support custom thousands separator';

describe('mocha spec reporter', () => {
  it('names tests by their full title and never takes a describe block (the failure header) for a test', () => {
    const r = parseTestOutput(fixture('mocha-spec-fail.txt'));
    expect(r.formats).toEqual(['mocha']);
    expect([r.passed, r.failed, r.skipped]).toEqual([4, 2, 1]);
    expect(r.tests).toEqual({
      'Test byte format function Should return null if input is invalid': 'pass',
      'Test byte format function Should convert numbers < 1024 to `bytes` string': 'pass',
      [FULL]: 'fail',
      'Test byte format function with options Should support fixed decimals': 'pass',
      'Test byte format function with options Should support unit separator': 'skip',
      'Test byte parse function Should parse KB': 'pass',
      'Test byte parse function Should fail on garbage': 'fail',
    });
  });

  it('the honest fix passes: every test that failed on the base now passes by name', () => {
    const j = judgeCheck(run(fixture('mocha-spec-pass.txt'), 0), baselineOf(run(fixture('mocha-spec-fail.txt'), 2)));
    expect(j).toMatchObject({ passed: true, findings: [], notes: [] });
  });

  it('attack: the failing test made pending (it.skip) fails, though the run exits 0 with no failure', () => {
    const skipped = fixture('mocha-spec-pass.txt')
      .replace('✔ Should support custom thousands separator', '- Should support custom thousands separator')
      .replace('6 passing', '5 passing')
      .replace('1 pending', '2 pending');
    const j = judgeCheck(run(skipped, 0), baselineOf(run(fixture('mocha-spec-fail.txt'), 2)));
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toContain(`failed on the base were skipped, not passed: ${FULL}`);
  });
});

describe('mocha dot and list reporters', () => {
  it('dot: failures named from the summary header, joined whole; passes only counted', () => {
    const r = parseTestOutput(fixture('mocha-dot-fail.txt'));
    expect(r.tests).toEqual({ [FULL]: 'fail', 'Test byte parse function Should fail on garbage': 'fail' });
    expect([r.passed, r.failed, r.skipped]).toEqual([4, 2, 1]);
  });

  it('list: full titles after the carriage return, the same identities as spec', () => {
    const list = parseTestOutput(fixture('mocha-list-fail.txt'));
    expect(list.tests).toEqual(parseTestOutput(fixture('mocha-spec-fail.txt')).tests);
  });

  it('dot: a fix judged by counts (passes are not named) passes; control: a failure left fails', () => {
    const base = baselineOf(run(fixture('mocha-dot-fail.txt'), 2));
    expect(judgeCheck(run('\n  .......\n\n  6 passing (3ms)\n  1 pending\n', 0), base).passed).toBe(true);
    expect(judgeCheck(run(fixture('mocha-dot-fail.txt'), 2), base).passed).toBe(false);
  });
});

describe('mocha run twice in one check', () => {
  // e.g. `mocha test/unit && mocha test/integration`, or a workspace script running each package's
  const twice = (a: string, b: string) => `${a}\n${b.replace(/Test byte/g, 'Other byte')}`;

  it('reads both listings and sums both summaries, never a failure header as a test', () => {
    const r = parseTestOutput(twice(fixture('mocha-spec-fail.txt'), fixture('mocha-spec-fail.txt')));
    expect([r.passed, r.failed, r.skipped]).toEqual([8, 4, 2]);
    expect(r.tests[`Other byte format function with options Should support custom thousands separator`]).toBe('fail');
    expect(Object.keys(r.tests)).toHaveLength(14);
    expect(r.doubts).toBeUndefined();
  });

  it("the fix in both passes; attack: the second run's failing test skipped fails", () => {
    const base = baselineOf(run(twice(fixture('mocha-spec-fail.txt'), fixture('mocha-spec-fail.txt')), 2));
    const fixed = fixture('mocha-spec-pass.txt');
    expect(judgeCheck(run(twice(fixed, fixed), 0), base)).toMatchObject({ passed: true, findings: [] });
    const skipped = fixed
      .replace('✔ Should support custom thousands separator', '- Should support custom thousands separator')
      .replace('6 passing', '5 passing')
      .replace('1 pending', '2 pending');
    const j = judgeCheck(run(twice(fixed, skipped), 0), base);
    expect(j.findings.join()).toContain('skipped, not passed: Other byte format function with options Should support custom thousands separator');
  });

  it("dot twice: each run's failures named from its own summary", () => {
    const r = parseTestOutput(twice(fixture('mocha-dot-fail.txt'), fixture('mocha-dot-fail.txt')));
    expect(Object.keys(r.tests).sort()).toEqual([
      'Other byte format function with options Should support custom thousands separator',
      'Other byte parse function Should fail on garbage',
      'Test byte format function with options Should support custom thousands separator',
      'Test byte parse function Should fail on garbage',
    ]);
  });
});
