/**
 * The verdict on one check, judged on its tests against the base (SWE-bench style): every test
 * that ran on the base must run again and pass — the ones that failed there (fail-to-pass) and
 * the ones that passed (pass-to-pass). An exit code alone proves nothing: `|| true` makes 0.
 * Skipped is not passed: a base test that is skipped now, or a new skip where the base could not
 * even collect its tests, is a finding. Where the names cannot be matched but the counts and the
 * exit code hold, the judgement carries a note instead: a parse that is unsure never counts
 * against the change.
 */
import { parseReports, type Report } from './reports.js';
import { stableKey } from './results/identity.js';
import { doubt, hasTest, merge, testsRan, type TestResults } from './results/model.js';
import { parseEach } from './results/text.js';

export interface CheckRun {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  output: string;
  /** what the runners wrote beside their output (readReports), read before the text */
  reports?: Report[];
}

/** What the check gave on the pristine base tree, before the model changed anything. */
export interface BaselineCheck {
  command: string;
  exitCode: number | null;
  results: TestResults;
  /** the check could not run on the base either: nothing the model does can fix that */
  couldNotRun?: string;
}

export interface CheckJudgement {
  passed: boolean;
  /** the check could not run at all (not found, exit 127) and did not run on the base either */
  infrastructure?: string;
  findings: string[];
  /** what the judge could not be sure of and judged by exit code and counts instead; never a failure */
  notes: string[];
  failingTests: string[];
  results: TestResults;
}

const MAX_NAMED = 10;
/** base entries that stand for a file or a hook rather than a test: they fail to load, not to pass */
const FILE_NAME = /^[\w./@-]+\.(?:[cm]?[jt]sx?|py)$/;
const HOOK = /"(?:before|after)(?: each| all)?" hook\b/;
const CUT_OUTPUT = /^\[\.\.\. kiln: \d+ bytes of output cut/m;

/**
 * A run's results: a runner's structured report stands in for what its text says, when both
 * count the same tests run; when they disagree, the text is kept and the names are in doubt.
 * Any process of the check can write into the reports directory, so a report counts only when
 * its runner's output vouches for it, or when the base — the repo's own code — wrote the same
 * kind (a quiet `pytest -qq` prints no summary to vouch with). `base` undefined: this is the base.
 */
export function resultsOf(run: Pick<CheckRun, 'output' | 'reports'>, base?: TestResults): TestResults {
  const parts = parseEach(run.output);
  for (const report of parseReports(run.reports ?? [])) {
    const format = report.formats[0]!;
    const runner = format.replace(/ junit$/, '');
    const i = parts.findIndex(([f]) => f === runner);
    if (i < 0) {
      if (!base || base.formats.includes(format)) parts.push([format, report]);
      continue;
    }
    const text = parts[i]![1];
    if (testsRan(text) === testsRan(report)) parts[i] = [format, report];
    else doubt(text, `${runner}'s report counts ${testsRan(report)} test(s) run, its printed summary ${testsRan(text)}`);
  }
  const results = merge(parts);
  if (CUT_OUTPUT.test(run.output) && parts.some(([f]) => !f.endsWith(' junit'))) doubt(results, 'the output was cut in the middle: names there are lost');
  return results;
}

/** Exit 126/127 or a shell's "not found": the command never got to run the tests. */
export function couldNotRun(run: Pick<CheckRun, 'exitCode' | 'output'>, results: TestResults): string | undefined {
  if (run.exitCode === 127 || run.exitCode === 126) return `exit ${run.exitCode} (command not found or not executable)`;
  if (run.exitCode !== 0 && testsRan(results) === 0 && /command not found|: not found\b|No such file or directory/.test(run.output)) {
    return `exit ${run.exitCode}: ${/.*(?:command not found|: not found\b|No such file or directory).*/.exec(run.output)![0].trim().slice(0, 160)}`;
  }
  return undefined;
}

export function baselineOf(run: CheckRun): BaselineCheck {
  const results = resultsOf(run);
  const cannot = couldNotRun(run, results);
  return { command: run.command, exitCode: run.exitCode, results, ...(cannot ? { couldNotRun: cannot } : {}) };
}

const list = (names: string[]) => `${names.slice(0, MAX_NAMED).join(', ')}${names.length > MAX_NAMED ? ` and ${names.length - MAX_NAMED} more` : ''}`;

const namesOf = (r: TestResults, status: string) => Object.keys(r.tests).filter((n) => r.tests[n] === status);

/** For each stable key: how many cases ran, and whether all of them passed. */
function casesByKey(r: TestResults): Map<string, { n: number; allPass: boolean }> {
  const keys = new Map<string, { n: number; allPass: boolean }>();
  for (const name in r.tests) {
    const s = r.tests[name];
    if (s === 'skip') continue;
    const k = stableKey(name);
    const e = keys.get(k) ?? { n: 0, allPass: true };
    e.n++;
    if (s !== 'pass') e.allPass = false;
    keys.set(k, e);
  }
  return keys;
}

const sameFormats = (a: TestResults, b: TestResults) => a.formats.length === b.formats.length && a.formats.every((f) => b.formats.includes(f));

function compare(before: TestResults, now: TestResults, exitOk: boolean, findings: string[], notes: string[]): void {
  if (before.formats.length && !now.formats.length) {
    findings.push(`no test results in the output (on the base it reported ${testsRan(before)} test(s))`);
    return;
  }
  const ranBefore = testsRan(before);
  const ranNow = testsRan(now);
  if (ranNow < ranBefore) findings.push(`fewer tests ran than on the base (${ranNow} < ${ranBefore})`);

  // a skip is the runner's own word: certain, whatever else could not be matched
  const collectErrors = new Set(before.collectErrors);
  const failedThenSkipped: string[] = [];
  const passedThenSkipped: string[] = [];
  for (const n in before.tests) {
    const b = before.tests[n];
    if (b === 'skip' || !hasTest(now, n) || now.tests[n] !== 'skip' || collectErrors.has(n)) continue;
    (b === 'fail' ? failedThenSkipped : passedThenSkipped).push(n);
  }
  if (failedThenSkipped.length) findings.push(`test(s) that failed on the base were skipped, not passed: ${list(failedThenSkipped)}`);
  if (passedThenSkipped.length) findings.push(`test(s) that passed on the base are skipped now: ${list(passedThenSkipped)}`);

  newSkipsAfterBrokenBase(before, now, findings);

  // a runner that names only failures (vitest's default reporter) cannot show a pass by name: the
  // counts decide there. A base where every test failed shows no pass either: the run after does
  const namesPasses = Object.values(before.tests).some((s) => s === 'pass') || Object.values(now.tests).some((s) => s === 'pass');
  if (!namesPasses) return;
  const nowNamed = Object.keys(now.tests).length;
  if (nowNamed === 0 && sameFormats(before, now) && !now.doubts) {
    findings.push(`the output names none of the tests (on the base it named ${Object.keys(before.tests).length})`);
    return;
  }
  const keysBefore = casesByKey(before);
  const keysNow = casesByKey(now);
  const missing: string[] = [];
  let unstable = 0;
  for (const n in before.tests) {
    const b = before.tests[n];
    if (b === 'skip' || hasTest(now, n)) continue;
    // a file that failed to load (or a hook that failed) on the base reports its tests under their own names once it works
    if (b === 'fail' && (FILE_NAME.test(n) || HOOK.test(n) || collectErrors.has(n)) && now.failed === 0) continue;
    const k = stableKey(n);
    const had = keysBefore.get(k)!;
    const has = keysNow.get(k);
    if (has && has.allPass && has.n >= had.n) {
      unstable++;
      continue;
    }
    missing.push(n);
  }
  if (unstable) notes.push(`${unstable} test id(s) differ from the base only in parts that change from run to run; matched by test and number of cases`);
  if (!missing.length) return;
  const countsHold = ranNow >= ranBefore && now.failed === 0 && exitOk;
  const sure = sameFormats(before, now) && !before.doubts && !now.doubts && !now.truncated;
  if (countsHold || !sure) {
    notes.push(
      `could not match ${missing.length} test name(s) from the base (${list(missing)}); judged by exit code and counts${[...(before.doubts ?? []), ...(now.doubts ?? [])].map((d) => `; ${d}`).join('')}`,
    );
  } else findings.push(`test(s) that ran on the base did not run: ${list(missing)}`);
}

/**
 * A base that could not collect some tests (an import error, a file that failed to load) never
 * showed what those tests do: tests skipped after the change may be exactly the ones it could
 * not load. Where the base stopped at the error, only the skips inside the broken files are new
 * for certain; where it went on, any skip it did not have is.
 */
function newSkipsAfterBrokenBase(before: TestResults, now: TestResults, findings: string[]): void {
  const brokenSet = new Set([...(before.collectErrors ?? []), ...namesOf(before, 'fail').filter((n) => FILE_NAME.test(n))]);
  const broken = [...brokenSet];
  if (!broken.length) return;
  const stopped = testsRan(before) <= broken.length;
  const skips = namesOf(now, 'skip').filter((n) => !hasTest(before, n) || before.tests[n] === 'fail');
  const named = stopped ? skips.filter((n) => brokenSet.has(n.split('::')[0]!)) : skips;
  if (named.length) findings.push(`the base could not load ${list(broken)}; after the change test(s) are skipped there: ${list(named)}`);
  else if (!skips.length && !Object.keys(now.tests).length && now.skipped > before.skipped)
    findings.push(`the base could not load ${list(broken)}; after the change ${now.skipped - before.skipped} more test(s) are skipped`);
}

export function judgeCheck(run: CheckRun, baseline: BaselineCheck | undefined): CheckJudgement {
  const results = resultsOf(run, baseline?.results ?? { formats: [], tests: {}, passed: 0, failed: 0, skipped: 0 });
  const findings: string[] = [];
  const notes: string[] = [];
  const cannot = couldNotRun(run, results);
  if (cannot && (!baseline || baseline.couldNotRun)) {
    return {
      passed: false,
      infrastructure: `${run.command}: could not run (${cannot})`,
      findings: [`could not run: ${cannot}`],
      notes,
      failingTests: [],
      results,
    };
  }
  const failing = namesOf(results, 'fail');
  if (run.timedOut) findings.push('timed out');
  else if (cannot) findings.push(`could not run after the change (${cannot}), though it ran on the base`);
  else if (run.exitCode !== 0) findings.push(`exit ${run.exitCode}`);
  if (results.failed > 0) {
    findings.push(`${results.failed} test(s) failed${run.exitCode === 0 ? ' although the check exited 0' : ''}${failing.length ? `: ${list(failing)}` : ''}`);
  }
  if (results.formats.length && testsRan(results) === 0) findings.push('no test ran');
  if (baseline && !baseline.couldNotRun) compare(baseline.results, results, run.exitCode === 0 && !run.timedOut, findings, notes);
  const named = baseline ? namesOf(baseline.results, 'fail').filter((n) => results.tests[n] !== 'pass') : [];
  const failingTests = [...new Set([...failing, ...(findings.length ? named : [])])].slice(0, 50);
  return { passed: findings.length === 0, findings, notes, failingTests, results };
}
