/**
 * What a check's output says about its tests: per-test results by name and the runner's counts,
 * so the verdict can be about tests and not about an exit code a script can fake.
 */
export type TestStatus = 'pass' | 'fail' | 'skip';

export interface TestResults {
  /** the runners whose output was recognised ("pytest junit" when read from a report); empty: no known format */
  formats: string[];
  /** per-test results by name, where the runner names them (a failure wins over a pass) */
  tests: Record<string, TestStatus>;
  passed: number;
  failed: number;
  /** skipped, xfailed, deselected, todo, known failures: tests that did not run to a pass */
  skipped: number;
  /** names past the cap were not kept (failures are kept further): a name absent here may still have run */
  truncated?: boolean;
  /** test files or modules the runner could not collect or load */
  collectErrors?: string[];
  /** why the names may not be trusted (two sources that disagree, a listing the parser could not follow) */
  doubts?: string[];
}

/**
 * Names kept per run. Each is at most NAME_CHARS long, so a result holds at most ~25 MB of names
 * in memory and in the baseline file; past the cap only the counts see a test, and failures get
 * FAILURES_PAST_CAP more room, since a failing test's name is what a fail-to-pass check needs.
 */
export const MAX_NAMES = 100_000;
const FAILURES_PAST_CAP = 10_000;
const NAME_CHARS = 200;

const sizes = new WeakMap<object, number>();

export function newResults(): TestResults {
  return { formats: [], tests: Object.create(null) as Record<string, TestStatus>, passed: 0, failed: 0, skipped: 0 };
}

export function hasTest(r: TestResults, name: string): boolean {
  return Object.hasOwn(r.tests, name);
}

export function add(r: TestResults, name: string, status: TestStatus): void {
  const n = name.trim().replace(/\s+/g, ' ').slice(0, NAME_CHARS);
  if (!n) return;
  const tests = r.tests;
  if (Object.hasOwn(tests, n)) {
    if (tests[n] !== 'fail') tests[n] = status;
    return;
  }
  const size = sizes.get(tests) ?? Object.keys(tests).length;
  if (size >= MAX_NAMES + (status === 'fail' ? FAILURES_PAST_CAP : 0)) {
    r.truncated = true;
    return;
  }
  tests[n] = status;
  sizes.set(tests, size + 1);
}

export function doubt(r: TestResults, why: string): void {
  (r.doubts ??= []).push(why);
}

export function collectError(r: TestResults, name: string): void {
  (r.collectErrors ??= []).push(name);
  add(r, name, 'fail');
}

/** Counts from the names, for runners whose summary does not give them. */
export function countNames(r: TestResults): void {
  for (const n in r.tests) {
    const s = r.tests[n];
    if (s === 'pass') r.passed++;
    else if (s === 'fail') r.failed++;
    else r.skipped++;
  }
}

/** One result from the results of several runners (a check may run more than one). */
export function merge(parts: Array<[string, TestResults]>): TestResults {
  const r = newResults();
  for (const [format, p] of parts) {
    r.formats.push(format);
    r.passed += p.passed;
    r.failed += p.failed;
    r.skipped += p.skipped;
    for (const n in p.tests) add(r, n, p.tests[n]!);
    if (p.truncated) r.truncated = true;
    if (p.collectErrors) (r.collectErrors ??= []).push(...p.collectErrors);
    if (p.doubts) (r.doubts ??= []).push(...p.doubts);
  }
  return r;
}

/** The number of tests the runner says it ran (skips excluded). */
export function testsRan(r: TestResults): number {
  return r.passed + r.failed;
}
