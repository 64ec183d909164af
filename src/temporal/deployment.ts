/**
 * Worker Versioning: every worker is one version (a build id) of a Worker Deployment, and a run
 * is PINNED to the version that started it, so a deploy never replays a run on workflow code it
 * was not started with. The deployment's current version takes new runs; old versions drain.
 */
import type { temporal } from '@temporalio/proto';
import { createHash } from 'node:crypto';
import { KilnError, UsageError } from '../shared/errors.js';
import { KILN_VERSION } from '../shared/version.js';
import { settingsFrom } from '../settings.js';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** Both the client's Connection and the worker's NativeConnection have one. */
interface HasWorkflowService {
  workflowService: Pick<
    temporal.api.workflowservice.v1.WorkflowService,
    'listWorkerDeployments' | 'describeWorkerDeployment' | 'setWorkerDeploymentCurrentVersion' | 'countWorkflowExecutions'
  >;
}

/** gRPC status codes (google.rpc.Code) */
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const PERMISSION_DENIED = 7;
const FAILED_PRECONDITION = 9;
const UNIMPLEMENTED = 12;
const UNAUTHENTICATED = 16;

const grpcCode = (err: unknown) => (err as { code?: unknown })?.code;

/**
 * The build id of a workflow bundle: Kiln's version and a hash of the bundled code. Two hosts
 * with the same code must agree, so the bundle's inline source map (which names every file by
 * its absolute path) is left out; the code itself names modules relative to Kiln's root.
 */
export function buildIdOf(bundleCode: string, version = KILN_VERSION): string {
  const code = bundleCode.replace(/\/\/# sourceMappingURL=[^\n]*\s*$/, '');
  return `${version}-${createHash('sha256').update(code).digest('hex').slice(0, 12)}`;
}

/** A build id given by hand (--build-id, KILN_BUILD_ID): what the CLI and the Web UI show. */
export function checkBuildId(id: string, from: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/.test(id)) {
    throw new UsageError(
      `${from} ${JSON.stringify(id)}: expected letters, digits and . _ + - (at most 100, starting with a letter or digit), e.g. 1.4.2 or a git sha`,
    );
  }
  return id;
}

/**
 * The deployment a worker belongs to: KILN_DEPLOYMENT, else its shared task queue's name, so two
 * Kiln installations that share a server by task queue (KILN_TASK_QUEUE) never switch each
 * other's current build.
 */
export function deploymentNameFor(taskQueue: string, env: NodeJS.ProcessEnv = process.env): string {
  const given = settingsFrom(env).deployment;
  const name = given ?? taskQueue;
  // the server's own rule: "worker deployment name cannot contain '.'"
  if (!/^[A-Za-z0-9_-][A-Za-z0-9_:/-]{0,99}$/.test(name)) {
    throw new UsageError(
      `deployment name ${JSON.stringify(name)}${given ? ' (--deployment / KILN_DEPLOYMENT)' : ' (from the task queue)'}: expected letters, digits and _ - : / (no dots); set KILN_DEPLOYMENT`,
    );
  }
  return name;
}

/**
 * Whether this server and namespace take versioned workers: undefined when they do, else why
 * not, in a line for the operator. Permission to list is what a versioned worker needs anyway.
 */
export async function versioningUnsupported(conn: HasWorkflowService, namespace: string): Promise<string | undefined> {
  try {
    await conn.workflowService.listWorkerDeployments({ namespace, pageSize: 1 });
    return undefined;
  } catch (err) {
    const code = grpcCode(err);
    const message = (err as Error).message ?? '';
    if (code === UNIMPLEMENTED) return 'this Temporal server has no Worker Deployment API (it needs server 1.28 or later)';
    if (code === PERMISSION_DENIED && /disabled/i.test(message)) {
      return `Worker Deployment Versions are disabled in namespace ${namespace}: set the server's dynamic config system.enableDeploymentVersions=true and frontend.workerVersioningWorkflowAPIs=true`;
    }
    if (code === PERMISSION_DENIED || code === UNAUTHENTICATED)
      return `this client may not use the Worker Deployment API in namespace ${namespace} (${message})`;
    throw err;
  }
}

export interface DeploymentState {
  /** the build that takes new runs; undefined: unversioned workers do */
  current?: string;
  /** status: inactive, current, ramping, draining (runs pinned to it are open) or drained */
  versions: { buildId: string; status: string }[];
  conflictToken?: Uint8Array | null;
  /** false while a routing change is still reaching the task queues (new runs may yet go to the old current) */
  propagated: boolean;
}

/** temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS */
const ROUTING_UPDATE_IN_PROGRESS = 1;

/** temporal.api.enums.v1.WorkerDeploymentVersionStatus, as words */
const VERSION_STATUS = ['unspecified', 'inactive', 'current', 'ramping', 'draining', 'drained'];

/** undefined when the deployment does not exist yet (no versioned worker has polled). */
export async function describeDeployment(conn: HasWorkflowService, namespace: string, deploymentName: string): Promise<DeploymentState | undefined> {
  let res;
  try {
    res = await conn.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  } catch (err) {
    if (grpcCode(err) === NOT_FOUND) return undefined;
    throw err;
  }
  const info = res.workerDeploymentInfo;
  return {
    current: info?.routingConfig?.currentDeploymentVersion?.buildId || undefined,
    versions: (info?.versionSummaries ?? []).map((s) => ({
      buildId: s.deploymentVersion?.buildId ?? '',
      status: VERSION_STATUS[s.status ?? 0] ?? 'unknown',
    })),
    conflictToken: res.conflictToken,
    propagated: info?.routingConfigUpdateState !== ROUTING_UPDATE_IN_PROGRESS,
  };
}

/** A build that cannot be made current as asked: the message says what to do. */
export class SetCurrentError extends KilnError {
  readonly retryable = false;
  override readonly exitCode = 2;
}

/**
 * Makes a build the deployment's current version: new runs start on it, runs already pinned to
 * another build stay there. The server refuses a build none of whose workers has polled yet.
 */
export async function setCurrentVersion(
  conn: HasWorkflowService,
  namespace: string,
  v: DeploymentVersion,
  opts: { conflictToken?: Uint8Array | null; identity?: string } = {},
): Promise<void> {
  try {
    await conn.workflowService.setWorkerDeploymentCurrentVersion({
      namespace,
      deploymentName: v.deploymentName,
      buildId: v.buildId,
      conflictToken: opts.conflictToken ?? undefined,
      identity: opts.identity ?? 'kiln',
    });
  } catch (err) {
    const code = grpcCode(err);
    if (code === FAILED_PRECONDITION || code === NOT_FOUND || code === INVALID_ARGUMENT) {
      throw new SetCurrentError(
        `build ${v.buildId} of deployment ${v.deploymentName} cannot be made current: ${(err as Error).message.replace(/^\d+ [A-Z_]+: /, '')} — start a worker of that build first (kiln worker --build-id ${v.buildId}); \`kiln deploy status\` lists the builds seen`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * A new worker's part of a deploy. 'if-none': it takes new runs only when no build does yet
 * (the first worker on a fresh server); a later build waits for `kiln deploy set-current`, so
 * starting one host early does not move the fleet. 'always': the worker is the only one there
 * is (`kiln dev`). Waits until the server has registered the version from the worker's polls.
 */
export async function takeNewRuns(
  conn: HasWorkflowService,
  namespace: string,
  v: DeploymentVersion,
  when: 'if-none' | 'always',
  timeoutMs = 30_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await describeDeployment(conn, namespace, v.deploymentName);
    if (d && d.current === v.buildId && (d.propagated || Date.now() > deadline)) return `build ${v.buildId} of deployment ${v.deploymentName} takes new runs`;
    if (d?.current && when === 'if-none') {
      return `build ${v.buildId} of deployment ${v.deploymentName} is ready, but build ${d.current} takes new runs: \`kiln deploy set-current --build-id ${v.buildId}\` moves new runs here (runs in flight stay on their build)`;
    }
    // the version appears once the server has seen this worker's polls
    if (d?.current !== v.buildId && d?.versions.some((x) => x.buildId === v.buildId)) {
      try {
        // the token makes two first workers starting at once agree on one of them
        await setCurrentVersion(conn, namespace, v, { conflictToken: d.conflictToken });
        continue;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
    if (Date.now() > deadline) {
      return `build ${v.buildId} of deployment ${v.deploymentName} was not registered by the server within ${timeoutMs / 1000} s, so it was not made current: \`kiln deploy set-current --build-id ${v.buildId}\``;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Until new runs really go to the current build: the server moves its task queues after it answers. */
export async function waitPropagated(conn: HasWorkflowService, namespace: string, deploymentName: string, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await describeDeployment(conn, namespace, deploymentName);
    if (d?.propagated) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The open workflows PINNED to these builds of a deployment: what keeps a build from draining, as
 * the server counts it. An AUTO_UPGRADE workflow (the budget ledger) shows the build of its last
 * task too, but moves to the current build by itself, so it is left out.
 */
export function pinnedRunsQuery(deploymentName: string, buildIds: string[]): string {
  const versions = buildIds.map((b) => `'${deploymentName}:${b}'`);
  return `TemporalWorkerDeploymentVersion IN (${versions.join(', ')}) AND ${PINNED_OPEN}`;
}

const PINNED_OPEN = `TemporalWorkflowVersioningBehavior='Pinned' AND ExecutionStatus='Running'`;

/** The visibility query for a deployment's open runs pinned to builds other than this one (system search attributes). */
export function otherBuildsQuery(v: DeploymentVersion): string {
  return `TemporalWorkerDeployment='${v.deploymentName}' AND TemporalWorkerDeploymentVersion!='${v.deploymentName}:${v.buildId}' AND ${PINNED_OPEN}`;
}

/** How many open runs are pinned to other builds: on a one-worker setup (`kiln dev`) they wait for a build that is gone. */
export async function openRunsOnOtherBuilds(conn: HasWorkflowService, namespace: string, v: DeploymentVersion): Promise<number> {
  const res = await conn.workflowService.countWorkflowExecutions({ namespace, query: otherBuildsQuery(v) });
  return Number(res.count ?? 0);
}
