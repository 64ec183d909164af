/**
 * The verdict on one check, judged on its tests against the base (SWE-bench style): every test
 * that ran on the base must run again and pass — the ones that failed there (fail-to-pass) and
 * the ones that passed (pass-to-pass). An exit code alone proves nothing: `|| true` makes 0.
 */
import { parseTestOutput, testsRan, type TestResults } from './results.js';

export interface CheckRun {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  output: string;
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
  failingTests: string[];
  results: TestResults;
}

const MAX_NAMED = 10;
const FILE_NAME = /^[\w./@-]+\.(?:[cm]?[jt]sx?|py)$/;

/** Exit 126/127 or a shell's "not found": the command never got to run the tests. */
export function couldNotRun(run: Pick<CheckRun, 'exitCode' | 'output'>, results: TestResults): string | undefined {
  if (run.exitCode === 127 || run.exitCode === 126) return `exit ${run.exitCode} (command not found or not executable)`;
  if (run.exitCode !== 0 && testsRan(results) === 0 && /command not found|: not found\b|No such file or directory/.test(run.output)) {
    return `exit ${run.exitCode}: ${/.*(?:command not found|: not found\b|No such file or directory).*/.exec(run.output)![0].trim().slice(0, 160)}`;
  }
  return undefined;
}

export function baselineOf(run: CheckRun): BaselineCheck {
  const results = parseTestOutput(run.output);
  const cannot = couldNotRun(run, results);
  return { command: run.command, exitCode: run.exitCode, results, ...(cannot ? { couldNotRun: cannot } : {}) };
}

const list = (names: string[]) => `${names.slice(0, MAX_NAMED).join(', ')}${names.length > MAX_NAMED ? ` and ${names.length - MAX_NAMED} more` : ''}`;

export function judgeCheck(run: CheckRun, baseline: BaselineCheck | undefined): CheckJudgement {
  const results = parseTestOutput(run.output);
  const findings: string[] = [];
  const cannot = couldNotRun(run, results);
  if (cannot && (!baseline || baseline.couldNotRun)) {
    return { passed: false, infrastructure: `${run.command}: could not run (${cannot})`, findings: [`could not run: ${cannot}`], failingTests: [], results };
  }
  const failing = Object.entries(results.tests)
    .filter(([, s]) => s === 'fail')
    .map(([n]) => n);
  if (run.timedOut) findings.push('timed out');
  else if (cannot) findings.push(`could not run after the change (${cannot}), though it ran on the base`);
  else if (run.exitCode !== 0) findings.push(`exit ${run.exitCode}`);
  if (results.failed > 0) {
    findings.push(`${results.failed} test(s) failed${run.exitCode === 0 ? ' although the check exited 0' : ''}${failing.length ? `: ${list(failing)}` : ''}`);
  }
  if (results.formats.length && testsRan(results) === 0) findings.push('no test ran');

  if (baseline && !baseline.couldNotRun) {
    const before = baseline.results;
    if (before.formats.length && !results.formats.length) findings.push(`no test results in the output (on the base it reported ${testsRan(before)} test(s))`);
    // a test file that failed to load on the base is reported under the file's name; once it loads,
    // its tests report under their own names: the file's entry is then not missing, if nothing fails
    const loadFailure = (n: string) => before.tests[n] === 'fail' && FILE_NAME.test(n) && results.failed === 0;
    const missing = Object.keys(before.tests).filter((n) => before.tests[n] !== 'skip' && !(n in results.tests) && !loadFailure(n));
    // a runner that names only failures (vitest's default reporter) cannot show a pass by name: the counts decide there
    const namesPasses = Object.values(before.tests).some((st) => st === 'pass');
    if (namesPasses && missing.length) findings.push(`test(s) that ran on the base did not run: ${list(missing)}`);
    if (testsRan(results) < testsRan(before)) findings.push(`fewer tests ran than on the base (${testsRan(results)} < ${testsRan(before)})`);
  }
  const named = baseline ? Object.keys(baseline.results.tests).filter((n) => baseline.results.tests[n] === 'fail' && results.tests[n] !== 'pass') : [];
  const failingTests = [...new Set([...failing, ...(findings.length ? named : [])])].slice(0, 50);
  return { passed: findings.length === 0, findings, failingTests, results };
}
