/**
 * Runs stranded on a build: Worker Versioning pins a run to the build that started it, so after
 * `kiln dev` is rebuilt its earlier runs wait for a worker of their old build, which nothing
 * starts. Right for a team's deployment (the old build's workers drain them), surprising on one
 * laptop: these say which runs wait and for what.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { otherBuildsQuery, type DeploymentVersion } from '../temporal/deployment.js';

export interface StrandedRun {
  runId: string;
  buildId: string;
}

/** temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED */
const PINNED = 1;

/** The open runs of `v`'s deployment pinned to another build, oldest first. */
export async function strandedRuns(client: Client, v: DeploymentVersion): Promise<StrandedRun[]> {
  const runs: StrandedRun[] = [];
  for await (const w of client.workflow.list({ query: otherBuildsQuery(v) })) {
    // a listing may leave the versioning info out; describing the run has it
    const info = w.raw.versioningInfo ?? (await client.workflow.getHandle(w.workflowId, w.runId).describe()).raw.workflowExecutionInfo?.versioningInfo;
    const buildId = pinnedBuild(info);
    if (buildId) runs.push({ runId: w.workflowId, buildId });
  }
  return runs.reverse();
}

type VersioningInfo = NonNullable<Awaited<ReturnType<WorkflowHandle['describe']>>['raw']['workflowExecutionInfo']>['versioningInfo'];

/** The build a run is pinned to: an override a person set wins over the build that started it. */
function pinnedBuild(info: VersioningInfo): string | undefined {
  const override = info?.versioningOverride?.pinned?.version?.buildId;
  if (override) return override;
  return info?.behavior === PINNED ? info.deploymentVersion?.buildId || undefined : undefined;
}

/** The builds whose workers poll this task queue now (the server lists a stopped worker for a while after). */
export async function buildsPolling(client: Client, taskQueue: string): Promise<Set<string>> {
  const res = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue } });
  return new Set((res.pollers ?? []).map((p) => p.deploymentOptions?.buildId ?? '').filter(Boolean));
}

/**
 * The build an open run waits for when no worker of it polls its task queue; undefined when the
 * run is not pinned, has ended, or a worker of its build runs.
 */
export async function waitingForBuild(client: Client, handle: WorkflowHandle): Promise<string | undefined> {
  const d = await handle.describe();
  if (d.status.name !== 'RUNNING') return undefined;
  const buildId = pinnedBuild(d.raw.workflowExecutionInfo?.versioningInfo);
  if (!buildId) return undefined;
  const polling = await buildsPolling(client, d.taskQueue);
  return polling.has(buildId) ? undefined : buildId;
}
