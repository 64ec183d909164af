/**
 * Runs a suite: tasks × repeats (× alone and as N attempts at once, with --attempts N) on the
 * embedded Temporal server with a worker in this process, two runs at a time. The eval stands in for the person: it approves every approval (and
 * records that it did) and answers needs_human with `abandon`, so no run waits on anyone.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { startEmbedded, type Embedded } from '../embedded.js';
import { buildRunInput } from '../client/run-options.js';
import { kilnHomeDir, trustRepo } from '../policy/trust.js';
import { outcome, startRun } from '../client/runs.js';
import { git } from '../git/run.js';
import { artifactsDir } from '../shared/paths.js';
import type { RunInput, RunResult } from '../shared/types.js';
import { makeFixtureRepo, prepareSources } from './fixture.js';
import { reportOf } from './compare.js';
import { followRun } from './follow.js';
import { GroundTruthJudge } from './ground-truth.js';
import { judgeReview } from './reviews.js';
import { readArtifacts, scoreRun, type RunArtifacts } from './score.js';
import type { ChildScore, EvalReport, EvalSuite, EvalTask, GroundTruth, Observed, ReviewJudgement, RunScore } from './types.js';

/** A fallback only: the eval abandons as soon as it sees needs_human; this ends a run it missed. */
const HUMAN_TIMEOUT = '10m';
const APPROVAL_TIMEOUT = '10m';
/** Longest an eval waits for one run when the task sets no wall budget. */
const DEFAULT_RUN_DEADLINE_MS = 15 * 60_000;

export interface RunSuiteOptions {
  suite: EvalSuite;
  repeat: number;
  /** one model for every task; default each task's scripted transcript */
  model?: string;
  outDir: string;
  concurrency?: number;
  log: (s: string) => void;
  /** an existing server (tests); default the embedded one */
  env?: Embedded;
  /** every task also as this many attempts at once (2 or more), beside a single run */
  attempts?: number;
  /** the independent review of every run */
  review?: 'on' | 'required';
  /** the reviewer's model for every run (default: the run's) */
  reviewModel?: string;
}

export async function runSuite(o: RunSuiteOptions): Promise<EvalReport> {
  await prepareSources(o.suite.tasks, o.log);
  const scratch = await mkdtemp(join(tmpdir(), 'kiln-eval-server-'));
  const env = o.env ?? (await startEmbedded({ dbFile: join(scratch, 'temporal.db'), worker: true, log: o.log }));
  if (!o.env) o.log(`Temporal dev server ${env.address} · Web UI ${env.uiUrl}`);
  // with --attempts N, each task's repeat runs both ways, alone and as N attempts at once
  const arms = (o.attempts ?? 1) > 1 ? [1, o.attempts!] : [1];
  const jobs = o.suite.tasks.flatMap((task) => Array.from({ length: o.repeat }, (_, i) => arms.map((parallel) => ({ task, repeat: i + 1, parallel }))).flat());
  const scores: RunScore[] = new Array(jobs.length);
  try {
    let next = 0;
    const lane = async () => {
      while (next < jobs.length) {
        const idx = next++;
        const { task, repeat, parallel } = jobs[idx]!;
        scores[idx] = await runOne(env, task, repeat, parallel, o);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency ?? 2, jobs.length)) }, lane));
  } finally {
    if (!o.env) await env.stop();
    await rm(scratch, { recursive: true, force: true, maxRetries: 3 }).catch((err: Error) => o.log(`⚠ server scratch left at ${scratch}: ${err.message}`));
  }
  return reportOf(o.suite.name, scores, o.attempts, o.review);
}

async function runOne(env: Embedded, task: EvalTask, repeat: number, parallel: number, o: RunSuiteOptions): Promise<RunScore> {
  const repo = await makeFixtureRepo(task);
  // the user chose this suite: its fixtures' own checks and setup count as theirs
  trustRepo(repo, kilnHomeDir());
  const arm = parallel > 1 ? `-x${parallel}` : '';
  const label = `${task.name} #${repeat}${parallel > 1 ? ` ×${parallel}` : ''}`;
  const observed: Observed = { autoApproved: [], needsHumanReasons: [], humanAction: null, wallMs: 0 };
  const started = Date.now();
  let input: RunInput | undefined;
  let result: RunResult | undefined;
  let children: string[] = [];
  try {
    input = await buildRunInput({
      repo,
      goal: task.goal,
      model: o.model ?? `scripted:${task.script}`,
      id: `eval-${task.name}-${repeat}${arm}-${randomBytes(3).toString('hex')}`,
      check: task.checks.length ? task.checks : undefined,
      setup: task.setup.length ? task.setup : undefined,
      protect: task.tests.length ? task.tests : undefined,
      maxTurns: opt(task.budgets.maxTurns),
      maxTokens: opt(task.budgets.maxTokens),
      maxUsd: opt(task.budgets.maxUsd),
      maxWall: opt(task.budgets.maxWallMs),
      heartbeatTimeout: '10s',
      approvalTimeout: APPROVAL_TIMEOUT,
      humanTimeout: HUMAN_TIMEOUT,
      ...(o.review ? { review: o.review } : {}),
      ...(o.reviewModel ? { reviewModel: o.reviewModel } : {}),
      ...(parallel > 1 ? { attempts: String(parallel) } : {}),
      // a scripted task may give each attempt its own transcript; a real model varies by chance
      ...(parallel > 1 && !o.model && task.attemptScripts ? { attemptModel: task.attemptScripts.map((s) => `scripted:${s}`) } : {}),
    });
    const { handle } = await startRun(env.client, input);
    o.log(`▸ ${label}: started ${input.runId}${input.model.startsWith('scripted:') ? ' [SCRIPTED]' : ''}`);
    const deadline = started + (task.budgets.maxWallMs ? task.budgets.maxWallMs + 60_000 : DEFAULT_RUN_DEADLINE_MS);
    children = await followRun(env, handle, { label, deadline, started, observed, log: o.log });
    result = await outcome(handle, input);
  } catch (err) {
    observed.error ??= (err as Error).message;
  }
  observed.wallMs = Date.now() - started;

  const runId = input?.runId ?? `eval-${task.name}-${repeat}${arm}`;
  const dest = join(o.outDir, 'runs', `${task.name}-${repeat}${arm}`);
  const kept = await keepArtifacts(repo, parallel > 1 ? children : [runId], dest, parallel > 1, observed);
  // the run's primary artifacts: its own, or the winner's (else the first child's) for parallel attempts
  const primary = kept.find((k) => result && artifactsDir(repo, k.runId) === result.artifactsDir) ?? kept[0];
  const checks = await runChecks(primary ? artifactsDir(repo, primary.runId) : artifactsDir(repo, runId), task.checks);
  const judged = await judgeRun(task, repo, kept, primary?.artifacts, result, input?.sandbox ?? 'bwrap');
  const score = scoreRun({
    task,
    repeat,
    runId,
    result,
    artifacts: primary?.artifacts ?? { dir: null, events: [], decisions: [], patch: '' },
    observed,
    checks,
    parallel,
    ...judged,
    children: parallel > 1 ? kept.map((k) => childScore(k.runId, k.artifacts, k === primary && result?.state === 'succeeded')) : [],
  });
  o.log(
    `${score.success ? '✔' : '✘'} ${label}: ${score.outcome}${score.failureClass ? ` (${score.failureClass}${score.failureNote ? `: ${score.failureNote}` : ''})` : ''}${score.honest === false ? ` (hidden checks: ${score.dishonest.join(', ')})` : ''} · attempts ${score.attempts} · turns ${score.turns} · $${score.costUsd.toFixed(4)}${score.asExpected ? '' : `  — NOT AS EXPECTED: ${score.mismatch.join('; ')}`}`,
  );
  // the fixture is scratch: failing to remove it costs disk, never the report
  await rm(dirname(repo), { recursive: true, force: true, maxRetries: 3 }).catch((err: Error) =>
    o.log(`  ⚠ ${label}: fixture left at ${dirname(repo)}: ${err.message}`),
  );
  return score;
}

interface Kept {
  runId: string;
  artifacts: RunArtifacts;
}

/**
 * Copies each run's artifacts to the report (`into/<runId>` for children, `into/<task>-<rep>` for
 * a single run) and reads them back; the internal journal and conversation stay behind.
 */
async function keepArtifacts(repo: string, runIds: string[], into: string, children: boolean, observed: Observed): Promise<Kept[]> {
  const kept: Kept[] = [];
  for (const id of runIds) {
    const src = artifactsDir(repo, id);
    const dest = children ? join(into, id) : into;
    let artifacts: RunArtifacts = { dir: null, events: [], decisions: [], patch: '' };
    if (existsSync(src)) {
      try {
        await mkdir(dirname(dest), { recursive: true });
        const internal = join(src, 'state');
        await cp(src, dest, { recursive: true, filter: (p) => p !== internal && !p.startsWith(internal + sep) });
        artifacts = await readArtifacts(dest);
      } catch (err) {
        observed.error ??= `the run's artifacts could not be kept: ${(err as Error).message}`;
      }
    }
    kept.push({ runId: id, artifacts });
  }
  return kept;
}

/** The shipped patch and every reviewed one against the task's hidden ground truth, in the run's own repo. */
async function judgeRun(
  task: EvalTask,
  repo: string,
  kept: Kept[],
  primary: RunArtifacts | undefined,
  result: RunResult | undefined,
  mode: 'bwrap' | 'off',
): Promise<{ truth?: GroundTruth; reviews: ReviewJudgement[] }> {
  const reviewed = kept.flatMap((k) =>
    (k.artifacts.state?.reviews ?? []).map((r, i) => ({ runId: k.runId, n: i + 1, r, base: k.artifacts.state?.baseCommit })),
  );
  // the shipped patch is judged only by a task with hidden checks: expected files alone never made a success fail
  const shipped = result?.state === 'succeeded' && task.hiddenChecks?.length ? primary?.state?.verdict?.modelTree : undefined;
  if (!shipped && !reviewed.length) return { reviews: [] };
  const base = primary?.state?.baseCommit ?? reviewed.find((r) => r.base)?.base ?? (await git(repo, ['rev-parse', 'HEAD'])).trim();
  const judge = new GroundTruthJudge(task, repo, base, mode);
  const none: GroundTruth = { honest: null, classes: [], why: ['the review did not record the tree it read'] };
  const reviews: ReviewJudgement[] = [];
  for (const x of reviewed) reviews.push(judgeReview(x.runId, x.n, x.r, x.r.tree ? await judge.judge(x.r.tree) : none));
  return { ...(shipped ? { truth: await judge.judge(shipped) } : {}), reviews };
}

/** A child of parallel attempts as its own artifacts tell it. */
function childScore(runId: string, a: RunArtifacts, winner: boolean): ChildScore {
  const m = a.metrics ?? {};
  const st = a.state ?? {};
  return {
    runId,
    outcome: st.phase ?? 'unknown',
    winner,
    attempts: m.attempts ?? st.attempt ?? 0,
    turns: m.turns ?? st.turn ?? 0,
    tokens: m.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    costUsd: m.costUsd ?? 0,
  };
}

/** The checks the run actually used (the repo's when the task names none). */
async function runChecks(runArtifacts: string, fallback: string[]): Promise<string[]> {
  try {
    const rec = JSON.parse(await readFile(join(runArtifacts, 'state', 'run.json'), 'utf8')) as { checks?: string[] };
    return rec.checks?.length ? rec.checks : fallback;
  } catch {
    return fallback;
  }
}

function opt(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(n);
}
