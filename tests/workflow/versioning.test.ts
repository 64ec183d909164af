/**
 * Upgrade-safe runs (Worker Versioning): two builds of Kiln whose workflow code differs
 * incompatibly run at once as real worker processes on one host. A run started on build A stays
 * on A after build B is made current; new runs go to B. The SCRIPTED model plays the agent.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { temporal } from '@temporalio/proto';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { execa } from 'execa';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcome } from '../../src/client/runs.js';
import { openRunsOnOtherBuilds, pinnedRunsQuery } from '../../src/temporal/deployment.js';
import { DEFAULT_TENANT, ledgerWorkflowId } from '../../src/shared/budget-ledger.js';
import { approveSignal } from '../../src/shared/messages.js';
import type { RunState } from '../../src/shared/types.js';
import type { kilnRun } from '../../src/workflows/run.js';
import { EXAMPLE_SCRIPT, ROOT, exampleRepo, testKilnHome } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { incompatibleBuild, TIMER_MS } from '../helpers/incompatible-build.js';
import { startTestServer } from '../helpers/temporal.js';
import { spawnWorker, WORKER_ENTRY, type WorkerProcess } from '../helpers/worker-process.js';
import { recording, untilAsked } from '../helpers/workflow-env.js';

let env: TestWorkflowEnvironment;
const workers: WorkerProcess[] = [];
const queue = `kiln-versioning-${process.pid}`;
let wenv: Record<string, string>;
let bRoot: string;

beforeAll(async () => {
  env = await startTestServer();
  // one host (shared host queue and KILN_HOME), as when a machine is upgraded in place
  wenv = { TEMPORAL_ADDRESS: env.address, KILN_TASK_QUEUE: queue, KILN_HOST: queue };
  // build B: one incompatible workflow change (a timer before the first activity)
  bRoot = incompatibleBuild('kiln-build-b-');
});

afterAll(async () => {
  for (const w of workers) await w.kill9();
  await env?.teardown();
});

async function worker(entry: string): Promise<{ w: WorkerProcess; buildId: string }> {
  const w = await spawnWorker(wenv, entry);
  workers.push(w);
  // the status lines follow the ready line
  const said = Date.now() + 10_000;
  while (!/versioning: .*\n/.test(w.output()) && Date.now() < said) await new Promise((r) => setTimeout(r, 50));
  const m = /versioning: build (\S+) of deployment (\S+)/.exec(w.output());
  expect(m, `the worker should say its build; output:\n${w.output()}`).not.toBeNull();
  expect(m![2]).toBe(queue);
  return { w, buildId: m![1]! };
}

type Handle = Awaited<ReturnType<typeof start>>;
async function start(taskQueue = queue) {
  const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}` });
  return recording(await env.client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: input.runId, taskQueue, args: [input] }), input);
}

async function approve(h: Handle, st: RunState): Promise<void> {
  await h.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: true, by: 'versioning test' });
}

/** the build the run is pinned to, as the server describes it */
async function pinnedTo(h: Handle): Promise<{ behavior: number; buildId: string; deploymentName: string }> {
  const v = (await h.describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { behavior: v?.behavior ?? 0, buildId: v?.deploymentVersion?.buildId ?? '', deploymentName: v?.deploymentVersion?.deploymentName ?? '' };
}

/** Which builds completed the run's workflow tasks, whether any task failed, and whether B's timer is there. */
async function historyOf(h: Handle) {
  const history = await h.fetchHistory();
  const events = history.events ?? [];
  const completedBy = new Set(
    events.flatMap((e) => (e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId] : [])),
  );
  const failed = events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes!.failure?.message);
  const ms = (t: temporal.api.history.v1.ITimerStartedEventAttributes) =>
    Number(t.startToFireTimeout?.seconds ?? 0) * 1000 + (t.startToFireTimeout?.nanos ?? 0) / 1e6;
  const bTimer = events.some((e) => e.timerStartedEventAttributes && ms(e.timerStartedEventAttributes) === TIMER_MS);
  return { history, completedBy: [...completedBy], failed, bTimer };
}

function kiln(...args: string[]) {
  return execa(process.execPath, [join(ROOT, 'bin', 'kiln.js'), ...args], {
    env: { ...process.env, KILN_HOME: testKilnHome(), ...wenv },
    reject: false,
  });
}

/** the SDK's PINNED and AUTO_UPGRADE, as temporal.api.enums.v1.VersioningBehavior */
const PINNED = 1;
const AUTO_UPGRADE = 2;

describe('upgrade-safe runs: two builds at once', () => {
  it('a run started on build A finishes on A after build B takes new runs, which run B’s code', async () => {
    const a = await worker(WORKER_ENTRY);
    expect(a.w.output()).toContain(`build ${a.buildId} of deployment ${queue} takes new runs`);
    const r1 = await start();
    const st1 = await untilAsked(r1, 90_000);
    expect(await pinnedTo(r1)).toEqual({ behavior: PINNED, buildId: a.buildId, deploymentName: queue });

    const b = await worker(join(bRoot, 'dist', 'src', 'worker.js'));
    expect(b.buildId, 'build B differs in workflow code, so in its derived build id').not.toBe(a.buildId);
    // a second build does not move new runs by itself starting
    expect(b.w.output()).toContain(`build ${a.buildId} takes new runs`);

    const set = await kiln('deploy', 'set-current', '--build-id', b.buildId);
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stdout).toContain(`build ${b.buildId} now takes new runs of deployment ${queue}`);
    expect(set.stdout).toContain(`runs started on build ${a.buildId} finish there`);
    const status = await kiln('deploy', 'status');
    expect(status.stdout).toContain(`new runs go to build ${b.buildId}`);
    expect(status.stdout).toMatch(new RegExp(`\\* ${b.buildId}\\s+current`));
    expect(status.stdout).toMatch(new RegExp(`  ${a.buildId}\\s+draining — runs pinned to it are open`));

    // the query docs/cluster.md gives for the runs that keep a build from draining: the run, not the ledger
    expect(await eventually(() => env.client.workflow.count(pinnedRunsQuery(queue, [a.buildId])))).toEqual(expect.objectContaining({ count: 1 }));
    // the tenant's budget ledger was started by A's run, yet holds no build: it moves with the current one
    const ledger = env.client.workflow.getHandle(ledgerWorkflowId(DEFAULT_TENANT));
    expect((await ledger.describe()).raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(AUTO_UPGRADE);

    // what `kiln dev` counts at start: runs a build other than its own holds
    expect(await openRunsOnOtherBuilds(env.connection, 'default', { deploymentName: queue, buildId: b.buildId })).toBe(1);
    expect(await openRunsOnOtherBuilds(env.connection, 'default', { deploymentName: queue, buildId: a.buildId })).toBe(0);

    const r2 = await start();
    const st2 = await untilAsked(r2, 90_000);
    expect(await pinnedTo(r2)).toEqual({ behavior: PINNED, buildId: b.buildId, deploymentName: queue });
    // B's run reserved its calls: B's worker answered the ledger, replaying what A's wrote, while A's run stays open
    const ledgerBy = (await ledger.fetchHistory()).events!.flatMap((e) =>
      e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId] : [],
    );
    expect(ledgerBy[0]).toBe(a.buildId);
    expect(ledgerBy.at(-1)).toBe(b.buildId);
    expect((await ledger.fetchHistory()).events!.some((e) => e.workflowTaskFailedEventAttributes)).toBe(false);

    // the A run resumes after the switch: its next tasks still go to A, whose code matches its history
    await approve(r1, st1);
    expect((await outcome(r1)).state).toBe('succeeded');
    await approve(r2, st2);
    expect((await outcome(r2)).state).toBe('succeeded');

    const h1 = await historyOf(r1);
    expect(h1.completedBy).toEqual([a.buildId]);
    expect(h1.failed).toEqual([]);
    expect(h1.bTimer).toBe(false);
    expect(await pinnedTo(r1)).toEqual({ behavior: PINNED, buildId: a.buildId, deploymentName: queue });
    const h2 = await historyOf(r2);
    expect(h2.completedBy).toEqual([b.buildId]);
    expect(h2.failed).toEqual([]);
    expect(h2.bTimer).toBe(true);

    // the change is a real break: A's run replays on A's code and fails on B's
    await Worker.runReplayHistory({ workflowBundle: await bundle(ROOT), replayName: 'build-a' }, h1.history, r1.workflowId);
    await expect(Worker.runReplayHistory({ workflowBundle: await bundle(bRoot), replayName: 'build-b' }, h1.history, r1.workflowId)).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  }, 300_000);

  it('control: unversioned, the same upgrade breaks the run in flight (build B replays it and fails)', async () => {
    const q = `${queue}-off`;
    const off = { ...wenv, KILN_TASK_QUEUE: q, KILN_HOST: q, KILN_VERSIONING: 'off' };
    const a = await spawnWorker(off, WORKER_ENTRY);
    workers.push(a);
    const said = Date.now() + 10_000;
    while (!a.output().includes('versioning:') && Date.now() < said) await new Promise((r) => setTimeout(r, 50));
    expect(a.output()).toContain('versioning: OFF (KILN_VERSIONING=off)');
    const r = await start(q);
    const st = await untilAsked(r, 90_000);
    expect((await pinnedTo(r)).behavior).toBe(0);
    // a rolling deploy without versioning: A goes, B comes, and B takes the run's next task
    await a.kill9();
    workers.push(await spawnWorker(off, join(bRoot, 'dist', 'src', 'worker.js')));
    await approve(r, st);
    const deadline = Date.now() + 60_000;
    let failed: (string | null | undefined)[] = [];
    while (!failed.length && Date.now() < deadline) {
      failed = (await historyOf(r)).failed;
      await new Promise((res) => setTimeout(res, 500));
    }
    expect(failed[0]).toMatch(/Nondeterminism/);
    await r.terminate('control test done');
  }, 300_000);
});

/** visibility is eventually consistent: the first answer with a count, within 15 s */
async function eventually(f: () => Promise<{ count: number }>): Promise<{ count: number }> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await f();
    if (r.count > 0 || Date.now() > deadline) return r;
    await new Promise((res) => setTimeout(res, 300));
  }
}

const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never;
function bundle(root: string) {
  return bundleWorkflowCode({ workflowsPath: join(root, 'dist', 'src', 'workflows', 'index.js'), logger: quiet });
}
