/**
 * verify: Kiln, not the model, decides "done". The checks run in the sandbox on a tree the model
 * never touched (see verify-tree.ts), and are judged on their tests against a baseline taken on
 * the pristine base: every test that ran there must run again and pass.
 */
import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { runPolicy } from './run-policy.js';
import { sensitiveInPatch } from '../policy/patch-secrets.js';
import { scratchCache, trustedCache } from '../checks/caches.js';
import { baselineOf, judgeCheck, type BaselineCheck } from '../checks/judge.js';
import { mergeTraces, storeTrace, type Influence, type StoredTrace } from '../checks/influence.js';
import { integrityFindings } from '../checks/integrity.js';
import type { CheckTrace } from '../checks/trace.js';
import { checkRuntimeDir, runCheck, runSetup, testFiles } from './check-runs.js';
import { judgeInfluence } from './verify-influence.js';
import { protectedSet } from '../checks/protected.js';
import type { Sandbox } from '../sandbox/types.js';
import type { CheckOutcome, Verdict } from '../shared/types.js';
import type { VerifyInput } from '../shared/contracts.js';
import type { ActivityDeps } from './deps.js';
import { heartbeating } from './heartbeat.js';
import { appendEvent, loadRun, readJson, runDir, stateDir, writeJsonAtomic, writeWorkflowEvents, type RunRecord } from '../store/run-files.js';
import { nestedRepoNotes } from '../store/nested-repos.js';
import { bringIncludes, buildVerifyTree, pristineCheckout, removeLeftoverCheckouts } from './verify-tree.js';

/** Per-check output tail kept in the verdict (history); the whole output is in tests.log. */
const CHECK_TAIL_CHARS = 1500;
/** Runners told to name every test they ran, so a pass can be checked by name; go's result cache is off. */
const NO_CHECKS = 'no checks: say how to verify, or accept';
/** Influencing files named in the verdict (history): the rest are in events.jsonl's count. */
const MAX_INFLUENCE = 30;
/** The baseline fills a cold toolchain cache (Go compiles its standard library once: ~75 s measured under load). */

export interface Baseline {
  base: string;
  checks: BaselineCheck[];
  /** setup or the sandbox failed on the pristine base */
  problem?: string;
  /** what the base's checks reached, all checks together; absent when a check ran untraced */
  trace?: StoredTrace;
}

export async function verify(deps: ActivityDeps, inp: VerifyInput): Promise<Verdict> {
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const rec = await loadRun(inp.repo, inp.runId);
  const repo = rec.input.repo;
  const log = join(runDir(inp.repo, inp.runId), 'tests.log');
  const say = (text: string) => appendFile(log, text);
  await say(`\n===== attempt ${inp.attempt} · ${new Date().toISOString()} =====\n`);
  deps.crash('verify');

  // the policy this run was started with (operator > user > trusted repo), not the checkout's file now
  const { config } = await runPolicy(rec, deps.env);
  // an older run record has no policy: the checks below mask what the recomputed one names
  rec.policy ??= config;
  // what prepare honoured (a trusted repo's own setup, include and link), not the checkout's file now
  const setup = rec.setup ?? rec.input.setup;
  const brought = rec.brought ?? { include: [], link: [] };
  const protect = rec.input.allowTestEdits
    ? null
    : protectedSet(config.protected, rec.checks, { unprotect: config.unprotect, pinned: rec.input.protect ?? [] });
  const leftovers = await removeLeftoverCheckouts(repo, rec.input.runId);
  if (leftovers.length) await say(`removed checkouts an earlier verification left: ${leftovers.join(', ')}\n`);
  const tree = await buildVerifyTree({
    repo,
    worktree: rec.worktree,
    base: rec.baseCommit,
    scratchDir: stateDir(inp.repo, inp.runId),
    label: `${rec.input.runId}-${inp.attempt}`,
    protect,
  });
  await say(`verifying tree ${tree.tree} (the model's tree ${tree.modelTree}) in a fresh checkout of ${rec.baseCommit.slice(0, 12)}\n`);
  const nestedNotes = nestedRepoNotes(tree);
  if (nestedNotes.length) await say(`${nestedNotes.join('\n')}\n`);

  const found: Findings = { problems: [], checks: [], notes: [] };
  const runtime = checkRuntimeDir(stateDir(inp.repo, inp.runId));
  const scratch = await heartbeating(() => scratchCache(repo));
  try {
    deps.crash('verify-checks');
    await runChecks(deps, { rec, repo, tree, protect, setup, brought, say, runtime }, scratch.dir, found);
  } finally {
    await tree.remove();
    await scratch.dispose();
  }
  const { problems, checks, notes, cause, influence, counterfactual } = found;

  const allowed = picomatch(config.writeAllow, { dot: true });
  const outOfScope = tree.changed.filter((f) => !allowed(f));
  const protectedChanged = tree.protectedChanged;
  if (outOfScope.length) problems.push(`changed files outside the allowed globs: ${outOfScope.join(', ')}`);
  if (protectedChanged.length)
    problems.push(
      `protected files changed (tests, test configuration, check definitions or CI; the base's version was verified): ${protectedChanged.join(', ')}`,
    );
  if (tree.ignoredAdded.length) problems.push(`files the repo's .gitignore ignores were added and left out: ${tree.ignoredAdded.slice(0, 10).join(', ')}`);
  problems.push(...(await sensitiveInPatch(rec.worktree, tree.changed, config)));
  if (!inp.gateSatisfied) problems.push('the checks were not run after the last edit');
  if (!tree.changed.length) problems.push('no files changed');

  const pass = problems.length === 0;
  const signature = createHash('sha256')
    .update(
      JSON.stringify([
        checks.filter((c) => !c.passed).map((c) => [c.command, [...c.failingTests].sort()]),
        outOfScope,
        protectedChanged,
        !tree.changed.length,
        cause ?? null,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  const unverified = !rec.checks.length && rec.input.allowUnverified ? 'UNVERIFIED (no checks; --unverified): ' : '';
  const summary = pass
    ? `${unverified}${checks.length ? `all ${checks.length} check(s) passed on tree ${tree.tree.slice(0, 12)}; ` : ''}${tree.changed.length} file(s) changed: ${tree.changed.join(', ')}${[...nestedNotes, ...notes].length ? `\nnote: ${[...nestedNotes, ...notes].slice(0, 5).join('; ')}` : ''}`
    : problems.join('\n');
  const verdict: Verdict = {
    pass,
    checks,
    outOfScope,
    protectedChanged,
    changedFiles: tree.changed,
    signature,
    summary,
    tree: tree.tree,
    modelTree: tree.modelTree,
    ...(cause ? { cause } : {}),
    ...(influence ? { influence: influence.filter((i) => i.class !== 'untouched').slice(0, MAX_INFLUENCE) } : {}),
    ...(counterfactual ? { counterfactual } : {}),
  };
  await appendEvent(inp.repo, inp.runId, {
    type: 'verdict',
    attempt: inp.attempt,
    pass,
    summary,
    signature,
    tree: tree.tree,
    cause: cause ?? null,
    failingTests: checks.flatMap((c) => c.failingTests).slice(0, 20),
    influence: verdict.influence ?? null,
    nested: nestedNotes,
    counterfactual: counterfactual ?? null,
  });
  return verdict;
}

/** What the checks found, gathered as they run; the verdict is made of it. */
interface Findings {
  problems: string[];
  checks: CheckOutcome[];
  /** where the verdict rests on less than test names (an uncertain parse): said, never held against the model */
  notes: string[];
  cause?: Verdict['cause'];
  influence?: Influence[];
  counterfactual?: Verdict['counterfactual'];
}

/** The verify tree and what its checks run with, as judgeInfluence reads them. */
type Scene = Omit<Parameters<typeof judgeInfluence>[0], 'sandbox' | 'baseline' | 'verified'>;

/** The run's checks on the verify tree, judged against the base's baseline; what they find goes into `found`. */
async function runChecks(deps: ActivityDeps, o: Scene, scratchDir: string, found: Findings): Promise<void> {
  const { rec, setup, brought, say } = o;
  if (!rec.checks.length) {
    if (rec.input.allowUnverified) await say('no checks; the user asked for an unverified run (--unverified)\n');
    else {
      found.cause = 'no_checks';
      found.problems.push(NO_CHECKS);
    }
    return;
  }
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await deps.sandbox(rec.input.sandbox);
  } catch (err) {
    found.cause = 'infrastructure';
    found.problems.push(`checks could not run: ${(err as Error).message}`);
  }
  if (!sandbox) return;
  const baseline = await ensureBaseline(rec, sandbox, setup, brought, say);
  if (baseline.problem) {
    found.cause = 'infrastructure';
    found.problems.push(`checks could not run on the base: ${baseline.problem}`);
    return;
  }
  await bringIncludes(o.repo, o.tree.dir, brought);
  const setupProblem = await runSetup(sandbox, rec, o.tree.dir, setup, scratchDir, say);
  if (setupProblem) {
    found.cause = 'infrastructure';
    found.problems.push(`checks could not run: setup failed in the verify tree: ${setupProblem}`);
    return;
  }
  const traces: Array<CheckTrace | undefined> = [];
  for (const command of rec.checks) traces.push(await checkOne(sandbox, o, baseline, command, scratchDir, found));
  if (found.problems.length) return;
  const verified = traces.every(Boolean) ? mergeTraces(traces as CheckTrace[]) : undefined;
  const judged = await judgeInfluence({ sandbox, ...o, baseline, verified });
  found.influence = judged.influence;
  found.counterfactual = judged.counterfactual;
  if (judged.problems.length) {
    found.cause = 'harness';
    found.problems.push(...judged.problems);
  }
}

/** One check on the verify tree, judged against its run on the base; its trace, when it ran traced. */
async function checkOne(sandbox: Sandbox, o: Scene, baseline: Baseline, command: string, scratchDir: string, found: Findings): Promise<CheckTrace | undefined> {
  const { rec, say } = o;
  const run = await runCheck(sandbox, rec, o.tree.dir, command, { cacheDir: scratchDir, say, runtimeDir: o.runtime, isTest: testFiles(rec) });
  const j = judgeCheck(
    run,
    baseline.checks.find((b) => b.command === command),
  );
  const tampered = integrityFindings(run.output);
  if (tampered.length) {
    j.passed = false;
    j.findings.push(`code under test changed the test runtime: ${tampered.join('; ')}`);
    found.cause = 'harness';
  }
  if (j.infrastructure) found.cause = 'infrastructure';
  found.checks.push({
    command,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    passed: j.passed,
    failingTests: j.failingTests,
    tail: run.output.slice(-CHECK_TAIL_CHARS),
  });
  const counts = `${j.results.passed} passed, ${j.results.failed} failed${j.results.formats.length ? ` (${j.results.formats.join(', ')})` : ' (no known test output)'}`;
  await say(`[verdict: ${j.passed ? 'pass' : `FAIL — ${j.findings.join('; ')}`}; ${counts}${j.notes.length ? `; note: ${j.notes.join('; ')}` : ''}]\n`);
  found.notes.push(...j.notes.map((n) => `${command}: ${n}`));
  if (!j.passed) found.problems.push(j.infrastructure ? `checks could not run: ${j.infrastructure}` : `check failed: ${command}: ${j.findings.join('; ')}`);
  return run.trace;
}

/**
 * The checks on the pristine base (after setup), once per run: which tests fail and which pass
 * before the model changed anything. The base's code is the repo's own, so it may warm the
 * trusted cache.
 */
export async function ensureBaseline(
  rec: RunRecord,
  sandbox: Sandbox,
  setup: string[],
  brought: { include: string[]; link: string[] },
  say: (t: string) => Promise<void>,
): Promise<Baseline> {
  const file = join(stateDir(rec.input.repo, rec.input.runId), 'baseline.json');
  const saved = await readJson<Baseline>(file);
  if (saved?.base === rec.baseCommit && saved.checks.length === rec.checks.length) return saved;
  await say(`--- baseline: the checks on the pristine base ${rec.baseCommit.slice(0, 12)} ---\n`);
  const co = await pristineCheckout(rec.input.repo, rec.baseCommit, `${rec.input.runId}-base`);
  const cache = await trustedCache(rec.input.repo);
  let baseline: Baseline;
  try {
    await bringIncludes(rec.input.repo, co.dir, brought);
    const problem = await runSetup(sandbox, rec, co.dir, setup, cache, say);
    if (problem) baseline = { base: rec.baseCommit, checks: [], problem: `setup failed: ${problem}` };
    else {
      const checks: BaselineCheck[] = [];
      const traces: Array<CheckTrace | undefined> = [];
      const runtime = checkRuntimeDir(stateDir(rec.input.repo, rec.input.runId));
      for (const command of rec.checks) {
        const run = await runCheck(sandbox, rec, co.dir, command, { cacheDir: cache, say, runtimeDir: runtime, isTest: testFiles(rec) });
        traces.push(run.trace);
        checks.push(baselineOf(run));
      }
      baseline = { base: rec.baseCommit, checks, ...(traces.every(Boolean) ? { trace: storeTrace(mergeTraces(traces as CheckTrace[])) } : {}) };
    }
  } finally {
    await co.remove();
  }
  await say(
    `--- end of baseline: ${baseline.checks.map((c) => `${c.command}: ${c.results.passed} passed, ${c.results.failed} failed${c.couldNotRun ? `, could not run (${c.couldNotRun})` : ''}`).join('; ') || baseline.problem} ---\n`,
  );
  await writeJsonAtomic(file, baseline);
  await appendEvent(rec.input.repo, rec.input.runId, {
    type: 'baseline',
    base: rec.baseCommit,
    checks: baseline.checks.map((c) => ({
      command: c.command,
      passed: c.results.passed,
      failed: c.results.failed,
      failing: Object.keys(c.results.tests)
        .filter((n) => c.results.tests[n] === 'fail')
        .slice(0, 20),
      couldNotRun: c.couldNotRun ?? null,
    })),
    problem: baseline.problem ?? null,
  });
  return baseline;
}
