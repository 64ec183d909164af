/**
 * Runs a suite: tasks × repeats on the embedded Temporal server with a worker in this process,
 * two runs at a time. The eval stands in for the person: it approves every approval (and
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
import { isClosed, outcome, readState, sendApproval, sendHuman, startRun } from '../client/runs.js';
import { artifactsDir } from '../shared/paths.js';
import type { RunInput, RunResult } from '../shared/types.js';
import { makeFixtureRepo, prepareSources } from './fixture.js';
import { totalsOf } from './report.js';
import { readArtifacts, scoreRun, type RunArtifacts } from './score.js';
import type { EvalReport, EvalSuite, EvalTask, Observed, RunScore } from './types.js';

export const EVAL_BY = 'kiln eval';
/** A fallback only: the eval abandons as soon as it sees needs_human; this ends a run it missed. */
const HUMAN_TIMEOUT = '10m';
const APPROVAL_TIMEOUT = '10m';
/** Longest an eval waits for one run when the task sets no wall budget. */
const DEFAULT_RUN_DEADLINE_MS = 15 * 60_000;
const POLL_MS = 300;

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
}

export async function runSuite(o: RunSuiteOptions): Promise<EvalReport> {
  await prepareSources(o.suite.tasks, o.log);
  const scratch = await mkdtemp(join(tmpdir(), 'kiln-eval-server-'));
  const env = o.env ?? (await startEmbedded({ dbFile: join(scratch, 'temporal.db'), worker: true, log: o.log }));
  if (!o.env) o.log(`Temporal dev server ${env.address} · Web UI ${env.uiUrl}`);
  const jobs = o.suite.tasks.flatMap((task) => Array.from({ length: o.repeat }, (_, i) => ({ task, repeat: i + 1 })));
  const scores: RunScore[] = new Array(jobs.length);
  try {
    let next = 0;
    const lane = async () => {
      while (next < jobs.length) {
        const idx = next++;
        const { task, repeat } = jobs[idx]!;
        scores[idx] = await runOne(env, task, repeat, o);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency ?? 2, jobs.length)) }, lane));
  } finally {
    if (!o.env) await env.stop();
    await rm(scratch, { recursive: true, force: true, maxRetries: 3 }).catch((err: Error) => o.log(`⚠ server scratch left at ${scratch}: ${err.message}`));
  }
  return { totals: totalsOf(o.suite.name, scores), runs: scores };
}

async function runOne(env: Embedded, task: EvalTask, repeat: number, o: RunSuiteOptions): Promise<RunScore> {
  const repo = await makeFixtureRepo(task);
  // the user chose this suite: its fixtures' own checks and setup count as theirs
  trustRepo(repo, kilnHomeDir());
  const label = `${task.name} #${repeat}`;
  const observed: Observed = { autoApproved: [], needsHumanReasons: [], humanAction: null, wallMs: 0 };
  const started = Date.now();
  let input: RunInput | undefined;
  let result: RunResult | undefined;
  try {
    input = await buildRunInput({
      repo,
      goal: task.goal,
      model: o.model ?? `scripted:${task.script}`,
      id: `eval-${task.name}-${repeat}-${randomBytes(3).toString('hex')}`,
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
    });
    const { handle } = await startRun(env.client, input);
    o.log(`▸ ${label}: started ${input.runId}${input.model.startsWith('scripted:') ? ' [SCRIPTED]' : ''}`);
    const deadline = started + (task.budgets.maxWallMs ? task.budgets.maxWallMs + 60_000 : DEFAULT_RUN_DEADLINE_MS);
    for (;;) {
      const st = await readState(handle);
      if (st) {
        for (const a of st.pendingApprovals) {
          if (observed.autoApproved.includes(a.id)) continue;
          observed.autoApproved.push(a.id);
          o.log(`  ✋ ${label}: auto-approving ${a.id} (${a.summary})`);
          await sendApproval(env.client, handle, { approvalId: a.id, approve: true, by: EVAL_BY, note: 'auto-approved by kiln eval' }).catch((err) =>
            o.log(`  ✋ ${label}: ${a.id} not applied: ${(err as Error).message}`),
          );
        }
        if (st.phase === 'needs_human' && observed.humanAction === null) {
          observed.needsHumanReasons.push(st.reason ?? '');
          observed.humanAction = 'abandon';
          o.log(`  👤 ${label}: needs a person (${(st.reason ?? '').split('\n')[0]!.slice(0, 120)}) → abandon`);
          await sendHuman(env.client, handle, { action: 'abandon', by: EVAL_BY, text: 'the eval never waits for a person' }).catch((err) =>
            o.log(`  👤 ${label}: abandon not applied: ${(err as Error).message}`),
          );
        }
      }
      if (await isClosed(handle)) break;
      if (Date.now() > deadline) {
        observed.error = `the eval gave up waiting after ${Math.round((Date.now() - started) / 1000)} s; run cancelled`;
        await handle.cancel().catch(() => undefined);
        break;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    result = await outcome(handle, input);
  } catch (err) {
    observed.error ??= (err as Error).message;
  }
  observed.wallMs = Date.now() - started;

  const runId = input?.runId ?? `eval-${task.name}-${repeat}`;
  const src = artifactsDir(repo, runId);
  const dest = join(o.outDir, 'runs', `${task.name}-${repeat}`);
  const checks = await runChecks(src, task.checks);
  let artifacts: RunArtifacts = { dir: null, events: [], decisions: [], patch: '' };
  if (existsSync(src)) {
    try {
      await mkdir(dirname(dest), { recursive: true });
      // the internal journal and conversation stay behind: the report keeps what people read
      const internal = join(src, 'state');
      await cp(src, dest, { recursive: true, filter: (p) => p !== internal && !p.startsWith(internal + sep) });
      artifacts = await readArtifacts(dest);
    } catch (err) {
      observed.error ??= `the run's artifacts could not be kept: ${(err as Error).message}`;
    }
  }
  const score = scoreRun({ task, repeat, runId, result, artifacts, observed, checks });
  o.log(
    `${score.success ? '✔' : '✘'} ${label}: ${score.outcome}${score.failureClass ? ` (${score.failureClass}${score.failureNote ? `: ${score.failureNote}` : ''})` : ''} · attempts ${score.attempts} · turns ${score.turns} · $${score.costUsd.toFixed(4)}${score.asExpected ? '' : `  — NOT AS EXPECTED: ${score.mismatch.join('; ')}`}`,
  );
  // the fixture is scratch: failing to remove it costs disk, never the report
  await rm(dirname(repo), { recursive: true, force: true, maxRetries: 3 }).catch((err: Error) =>
    o.log(`  ⚠ ${label}: fixture left at ${dirname(repo)}: ${err.message}`),
  );
  return score;
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
