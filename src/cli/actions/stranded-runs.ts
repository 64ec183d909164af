/**
 * `kiln dev` at start: the runs a previous build started wait for a worker of that build, which
 * a rebuilt `kiln dev` does not run. It lists them and finishes them on their build (when that
 * build is kept here), cancels them (artifacts written), or leaves them, as the person says.
 */
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';
import { createInterface } from 'node:readline/promises';
import { approverFor } from '../../client/signed-approver.js';
import { handleFor, requestCancel } from '../../client/runs.js';
import { strandedRuns, type StrandedRun } from '../../client/stranded.js';
import { pinnedRunsQuery, type DeploymentVersion } from '../../temporal/deployment.js';
import { refreshWorkflowTasks } from '../../temporal/redispatch.js';
import { isKept, keepThisBuild, pruneKeptBuilds, startKeptWorker, type KeptWorker } from './kept-builds.js';

const STRANDED_CHOICES = ['finish', 'cancel', 'leave'] as const;
export type StrandedChoice = (typeof STRANDED_CHOICES)[number];

const INDENT = '                     ';

export interface StrandedHandling {
  /** the kept builds' workers started here; `kiln dev` stops them when it stops */
  workers: KeptWorker[];
  stop(): Promise<void>;
}

/**
 * Keeps this build, lists the stranded runs and acts on `choice`; without one, asks on a
 * terminal and leaves them otherwise (a non-interactive start never waits for an answer).
 */
export async function handleStrandedRuns(o: {
  client: Client;
  version: DeploymentVersion;
  address: string;
  workerEnv: NodeJS.ProcessEnv;
  choice?: StrandedChoice;
  interactive: boolean;
  out: (s: string) => void;
}): Promise<StrandedHandling> {
  const { client, version: v, out } = o;
  try {
    keepThisBuild(v.buildId);
  } catch (err) {
    // this build's runs could not be finished by a later one: said, while everything else goes on
    out(`${INDENT}this build's code could not be kept for its runs after a rebuild: ${(err as Error).message}`);
  }
  const runs = await strandedRuns(client, v);
  pruneKeptBuilds(new Set([v.buildId, ...runs.map((r) => r.buildId)]));
  const none: StrandedHandling = { workers: [], stop: async () => {} };
  if (!runs.length) return none;
  out(`${INDENT}${runs.length} open run(s) wait for a worker of an earlier build of Kiln (Worker Versioning pins a run to its build):`);
  for (const r of runs) out(`${INDENT}  ${r.runId}  build ${r.buildId}${isKept(r.buildId) ? '' : ' (not kept here: it cannot run again)'}`);
  const kept = runs.filter((r) => isKept(r.buildId));
  const lost = runs.filter((r) => !isKept(r.buildId));
  if (lost.length) {
    out(
      `${INDENT}${lost.length} of them stay waiting whatever you choose: their build is not kept here, so no worker can run their code. To move them to this build (safe only when the change was behind patched()): temporal workflow update-options --query "${lostQuery(v.deploymentName, lost)}" --versioning-override-behavior pinned --versioning-override-deployment-name ${v.deploymentName} --versioning-override-build-id ${v.buildId}`,
    );
  }
  if (!kept.length) return none;
  const choice = o.choice ?? (o.interactive ? await ask() : undefined);
  if (!choice || choice === 'leave') {
    out(
      `${INDENT}left waiting${o.choice ? '' : ' (`kiln dev --stranded finish` runs them on their build, `--stranded cancel` cancels them, artifacts written)'}`,
    );
    return none;
  }
  const workers = await startWorkers(kept, o.address, o.workerEnv, out);
  if (choice === 'cancel') await cancelAll(client, kept, out);
  const drains = workers.map((w) => drain(client, o.address, v.deploymentName, w, out));
  return {
    workers,
    async stop() {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all(drains);
    },
  };
}

/** The open runs of the builds not kept, only: the kept builds' runs are finished on their own code. */
function lostQuery(deploymentName: string, lost: StrandedRun[]): string {
  return pinnedRunsQuery(deploymentName, [...new Set(lost.map((r) => r.buildId))]);
}

async function ask(): Promise<StrandedChoice> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (;;) {
      const a = (await rl.question(`${INDENT}[f]inish them on their build, [c]ancel them (artifacts written), or [l]eave them waiting? `)).trim().toLowerCase();
      const choice = STRANDED_CHOICES.find((c) => a.length > 0 && c.startsWith(a));
      if (choice) return choice;
    }
  } finally {
    rl.close();
  }
}

async function startWorkers(kept: StrandedRun[], address: string, env: NodeJS.ProcessEnv, out: (s: string) => void): Promise<KeptWorker[]> {
  const workers: KeptWorker[] = [];
  for (const buildId of new Set(kept.map((r) => r.buildId))) {
    try {
      const workerEnv = { ...env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default' };
      // a start can fail on a timeout of its first call to the server, which a loaded machine sees: once more
      const w = await startKeptWorker(buildId, workerEnv).catch(() => startKeptWorker(buildId, workerEnv));
      workers.push(w);
      out(`${INDENT}build ${buildId}: its worker runs until its runs end (log: ${w.log})`);
    } catch (err) {
      out(`${INDENT}build ${buildId}: ${(err as Error).message}; its runs stay waiting`);
    }
  }
  return workers;
}

/** A normal `kiln cancel`: the run's own build stops it, writes its artifacts and removes its worktree. */
async function cancelAll(client: Client, runs: StrandedRun[], out: (s: string) => void): Promise<void> {
  for (const r of runs) {
    const handle = handleFor(client, r.runId);
    const by = await approverFor(handle, undefined, { kind: 'cancel' });
    const sent = await requestCancel(handle, { by, reason: `its build ${r.buildId} was replaced by a rebuilt kiln dev`, via: client.options.identity });
    out(`${INDENT}${r.runId}: ${sent ? 'cancelling: it writes its artifacts and removes its worktree' : 'had ended already'}`);
  }
}

/**
 * Stops a kept build's worker once no open run is pinned to its build; meanwhile hands over again
 * any of their workflow tasks the server keeps waiting although this worker polls.
 */
async function drain(client: Client, address: string, deploymentName: string, w: KeptWorker, out: (s: string) => void): Promise<void> {
  const query = pinnedRunsQuery(deploymentName, [w.buildId]);
  const handOver = new HandOver(client, address, out);
  while (w.child.exitCode === null && w.child.signalCode === null) {
    await new Promise((r) => setTimeout(r, 3000));
    const open = await client.workflow.count(query).catch(() => undefined);
    if (open?.count === 0) {
      await w.stop();
      out(`build ${w.buildId}: its runs have ended; its worker stopped`);
      return;
    }
    await handOver.check(query, w.readyAt).catch(() => undefined);
  }
}

/** How long a workflow task may wait while a worker of its build polls before it is handed over again. */
export const HAND_OVER_AFTER_MS = 10_000;

/**
 * A run's workflow task queued while no worker of its build ran can stay queued after the dev
 * server restarts, even once that build's worker polls (seen in about one restart in four): the
 * server is asked to queue it again, at most every HAND_OVER_AFTER_MS per run.
 */
class HandOver {
  private readonly last = new Map<string, number>();
  private namespaceId?: string;

  constructor(
    private readonly client: Client,
    private readonly address: string,
    private readonly out: (s: string) => void,
  ) {}

  async check(query: string, pollingSince: number): Promise<void> {
    const now = Date.now();
    if (now - pollingSince < HAND_OVER_AFTER_MS) return;
    for await (const run of this.client.workflow.list({ query })) {
      const task = (await this.client.workflow.getHandle(run.workflowId, run.runId).describe()).raw.pendingWorkflowTask;
      if (task?.state !== PENDING_WORKFLOW_TASK_STATE_SCHEDULED) continue;
      const waitedMs = now - Math.max(pollingSince, optionalTsToMs(task.scheduledTime) ?? 0);
      if (waitedMs < HAND_OVER_AFTER_MS || now - (this.last.get(run.runId) ?? 0) < HAND_OVER_AFTER_MS) continue;
      this.last.set(run.runId, now);
      this.namespaceId ??= (await this.client.workflowService.describeNamespace({ namespace: this.client.options.namespace })).namespaceInfo?.id ?? '';
      await refreshWorkflowTasks(this.address, this.namespaceId, run.workflowId, run.runId);
      this.out(
        `${INDENT}${run.workflowId}: its next step waited ${Math.round(waitedMs / 1000)} s for this build's worker; the server was asked to hand it over again`,
      );
    }
  }
}

/** temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED */
const PENDING_WORKFLOW_TASK_STATE_SCHEDULED = 1;
