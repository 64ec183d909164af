/**
 * A Kiln worker: workflows and prepareWorkspace on the shared queue; everything that touches a
 * worktree on this host's own queue (Temporal's worker-specific task queues pattern), so a run's
 * activities always reach the machine that holds its worktree.
 */
import { NativeConnection, Runtime, Worker, type WorkerDeploymentOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createActivities, defaultDeps, type ActivityDeps } from './activities/index.js';
import { useSpawner } from './process/spawn.js';
import { createSandbox, discardKeptSandboxes, probeSummary } from './sandbox/index.js';
import type { OperatorConfig } from './policy/run-request.js';
import { DEFAULT_RUN_CEILINGS } from './policy/run-ceilings.js';
import { DEFAULT_TASK_QUEUE } from './shared/constants.js';
import { temporalSettings, type TemporalSettings } from './temporal/connection.js';
import { retryTrace } from './activities/retry-trace.js';
import { registerSearchAttributes, SearchAttributesNotRegisteredError } from './temporal/register-search-attributes.js';
import { FAILURE_CONVERTER_PATH, codecStatus, kilnDataConverter, type KilnDataConverter } from './codec/data-converter.js';
import { installMetricsRuntime, metricsStatus } from './temporal/metrics.js';
import { startFleetGauges, type FleetGauges } from './temporal/fleet-gauges.js';
import { buildIdOf, checkBuildId, deploymentNameFor, takeNewRuns, versioningUnsupported, type DeploymentVersion } from './temporal/deployment.js';
import { settings as kilnSettings, settingsFrom } from './settings.js';

/**
 * The workflows beside this module, in its own form: dist/src/workflows/index.js when the worker
 * runs compiled, src/workflows/index.ts when tests import it from source (the bundler compiles
 * TypeScript itself), so a test never runs workflow code older than the source it reads.
 */
export const WORKFLOWS_PATH = fileURLToPath(new URL(`./workflows/index${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export interface RunningWorker {
  hostQueue: string;
  /** what start-up did about Kiln's search attributes, in one line for the operator */
  searchAttributes: string;
  /** whether this worker encrypts history, in one line for the operator */
  codec: string;
  /** this worker's deployment version; undefined when it runs unversioned */
  version?: DeploymentVersion;
  /** the build, and whether it takes new runs, in one line for the operator */
  versioning: string;
  /** the server's counts of runs by phase, when this worker exports metrics */
  fleetGauges?: FleetGauges;
  run: Promise<void>;
  shutdown(): Promise<void>;
}

/** The start-up probe, said once so an operator sees at start whether commands will run. */
export async function sandboxStatus(): Promise<string> {
  try {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    return sandbox.probe ? probeSummary(sandbox.probe) : 'sandbox: bubblewrap probe passed';
  } catch (err) {
    return `sandbox: UNAVAILABLE — run_command will be refused unless a run uses --sandbox off: ${(err as Error).message}`;
  }
}

/** Said loudly at start: an operator who allows sandbox off must see that they did. */
export function operatorStatus(o: OperatorConfig): string {
  const sandbox = o.allowSandboxOff
    ? 'operator: SANDBOX OFF ALLOWED — a run that asks for --sandbox off runs its commands unsandboxed on this host'
    : 'operator: runs asking for --sandbox off are refused (allow with --allow-sandbox-off)';
  const repos = o.repoRoots ? `repos under ${o.repoRoots.join(', ')} only` : 'any repo this worker can read (bound with KILN_REPO_ROOTS)';
  const setup =
    o.allowClientSetup === false ? "a client's own setup commands refused" : "a client's own setup commands allowed (refuse with KILN_ALLOW_CLIENT_SETUP=0)";
  const c = o.ceilings ?? DEFAULT_RUN_CEILINGS;
  const ceilings = `a run may ask for up to ${c['budgets.maxTurns']} turns, $${c['budgets.maxUsd']}, ${c['budgets.maxWallMs'] / 3_600_000} h, ${c.commandTimeoutMs / 60_000} min a command (KILN_RUN_CEILINGS)`;
  return `${sandbox}; ${repos}; ${setup}; ${ceilings}`;
}

/**
 * The worker's model settings, said at start: the key belongs to the worker (the process that
 * calls the model), not to the shell that runs `kiln run`. Scripted runs need nothing.
 */
export function modelStatus(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.ANTHROPIC_BASE_URL?.trim();
  const where = base ? ` at ${base}` : '';
  const compatible = settingsFrom(env).openaiCompatibleUrls ?? [];
  const others = [
    ...(env.OPENAI_API_KEY?.trim() ? ['OPENAI_API_KEY set (openai: models)'] : []),
    ...(compatible.length ? [`openai-compatible servers: ${compatible.join(', ')}`] : []),
  ];
  const more = others.length ? `; ${others.join('; ')}` : '';
  if (env.ANTHROPIC_API_KEY?.trim()) return `model: ANTHROPIC_API_KEY set for this worker${where}; real models can run${more}`;
  return `model: ANTHROPIC_API_KEY is NOT set for this worker${where} — runs with a real model will be blocked at their first turn; set it in the environment that starts the worker (\`kiln dev\` / \`kiln worker\`). Scripted runs (--model scripted:FILE) work.${more}`;
}

/**
 * Cancellation reaches an activity only with a heartbeat's answer, and the SDK throttles
 * heartbeats to 80% of the heartbeat timeout (24 s at the default 30 s: a cancelled `sleep`
 * ran on for 21.8 s). One heartbeat a second reaches the server, so a cancel lands in ~1 s.
 */
export const HEARTBEAT_THROTTLE = '1 second';

/**
 * How long a run's next workflow task (an Update, a query, an activity's result) waits on the
 * queue of the worker that ran it last before any worker may take it. The SDK's 10 s made every
 * `kiln approve` after a worker restart wait out the dead worker's queue and fall back to a
 * Signal. A live worker takes its own sticky tasks in milliseconds; one that misses a second (a
 * blocked event loop) only replays the run from history, which is correct, just slower.
 */
export const STICKY_QUEUE_WAIT = '1 second';

/**
 * Fleet queries need Kiln's search attributes on the server; a worker registers the missing ones.
 * A client without the permission, or a server without the operator API, still runs work: the
 * line says who must add them.
 */
export async function ensureSearchAttributes(connection: Parameters<typeof registerSearchAttributes>[0], namespace: string): Promise<string> {
  try {
    const r = await registerSearchAttributes(connection, namespace);
    return r.added.length ? `search attributes: added ${r.added.join(', ')}` : 'search attributes: all present';
  } catch (err) {
    if (err instanceof SearchAttributesNotRegisteredError) return `search attributes: NOT REGISTERED — ${err.message}`;
    throw err;
  }
}

/** Kiln's own root (where package.json is), from src/ or dist/src/ alike. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * How a worker takes part in Worker Versioning. buildId: default KILN_BUILD_ID, else derived
 * from the workflow bundle. off: run unversioned (KILN_VERSIONING=off). takeNewRuns: see
 * takeNewRuns() in temporal/deployment.ts.
 */
export interface VersioningOptions {
  buildId?: string;
  deploymentName?: string;
  off?: boolean;
  takeNewRuns?: 'if-none' | 'always';
}

/** Versioned unless switched off or the server cannot: a run then finishes on the build that started it. */
async function versioningFor(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  code: string,
  o: VersioningOptions,
): Promise<{ version?: DeploymentVersion; line: string }> {
  const off = 'runs are not pinned to a build: after an upgrade a newer worker replays runs in flight (keep workflow changes behind patched())';
  if (o.off ?? kilnSettings().versioningOff) return { line: `versioning: OFF (KILN_VERSIONING=off) — ${off}` };
  const env = kilnSettings().buildId;
  const buildId = o.buildId ?? (env ? checkBuildId(env, 'KILN_BUILD_ID') : buildIdOf(code));
  const deploymentName = o.deploymentName ?? deploymentNameFor(taskQueue);
  const why = await versioningUnsupported(connection, namespace);
  if (why) return { line: `versioning: OFF — ${why}; ${off}` };
  return { version: { deploymentName, buildId }, line: '' };
}

/**
 * PINNED: a run stays on the build that started it until it ends, so a deploy does not replay it
 * on new code; the old build's workers must run until its runs drain. Said here, not in the
 * workflow (setWorkflowOptions): an unversioned worker's task completions are refused by the
 * server when the workflow names a behaviour. patched() stays the rule for workflow changes all
 * the same: unversioned workers and runs moved to another build by hand replay across builds.
 */
function deploymentOptions(version: DeploymentVersion | undefined): WorkerDeploymentOptions | undefined {
  return version && { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

const bundles = new Map<boolean, Promise<WorkflowBundleWithSourceMap>>();
/**
 * Bundled once per process (several workers, shared + host queue, reuse it), by webpack in a
 * child process: bundling in the worker left ~50 MB of webpack's working set resident for the
 * worker's whole life (measured: 119 → 177 MB RSS after a forced GC). With encryption the bundle
 * carries the failure converter that turns workflow errors into (encrypted) payloads. Modules are
 * named relative to Kiln's root, not the working directory, so the same code is the same build id
 * wherever a host starts its worker.
 */
export function workflowBundle(encrypted = false): Promise<WorkflowBundleWithSourceMap> {
  let b = bundles.get(encrypted);
  if (!b) {
    b = bundleInChild(WORKFLOWS_PATH, encrypted ? FAILURE_CONVERTER_PATH : undefined);
    bundles.set(encrypted, b);
  }
  return b;
}

/** The child's whole program: bundle the workflows it is given, print the bundle as JSON. */
const BUNDLE_CHILD = `
const [worker, root, workflowsPath, failureConverterPath] = process.argv.slice(1);
const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const { bundleWorkflowCode } = await import(worker);
const b = await bundleWorkflowCode({
  workflowsPath,
  logger: quiet,
  webpackConfigHook: (config) => ({ ...config, context: root }),
  ...(failureConverterPath ? { failureConverterPath } : {}),
});
process.stdout.write(JSON.stringify({ code: b.code, sourceMap: b.sourceMap }));
`;

function bundleInChild(workflowsPath: string, failureConverterPath?: string): Promise<WorkflowBundleWithSourceMap> {
  const worker = pathToFileURL(createRequire(import.meta.url).resolve('@temporalio/worker')).href;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', BUNDLE_CHILD, worker, packageRoot(), workflowsPath, ...(failureConverterPath ? [failureConverterPath] : [])],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`bundling the workflows (${workflowsPath}) failed: ${err.trim() || `exit ${code}`}`));
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as WorkflowBundleWithSourceMap);
      } catch (e) {
        reject(new Error(`bundling the workflows printed no bundle: ${(e as Error).message}; ${err.trim()}`));
      }
    });
  });
}

/**
 * A stop (Ctrl-C, SIGTERM) cancels the running activities at once and waits this long for them to
 * end: an activity that never does (a call that ignores its cancel, a server that cannot record
 * the completion while its disk is full) would otherwise hold the process forever. Temporal
 * retries such an activity on the next worker.
 */
export const WORKER_FORCE_STOP_MS = 30_000;

export async function startWorker(
  opts: {
    settings?: TemporalSettings;
    connection?: NativeConnection;
    taskQueue?: string;
    deps?: ActivityDeps;
    /** default: the keys in this process's environment (KILN_CODEC_KEYS_FILE, KILN_CODEC_KEY) */
    dataConverter?: KilnDataConverter;
    versioning?: VersioningOptions;
    /**
     * Fleet gauges (kiln_runs by phase, runs waiting for approval) counted on the server: give it
     * when the process exports metrics. `log` hears a failed count (default: stderr).
     */
    fleetGauges?: { intervalMs?: number; log?: (line: string) => void };
    /** how long a stop waits for activities that do not end when cancelled (default WORKER_FORCE_STOP_MS) */
    forceStopAfterMs?: number;
  } = {},
): Promise<RunningWorker> {
  const settings = opts.settings ?? temporalSettings();
  // a bad keyring stops the worker before it connects: one that ran without it would write plaintext
  const converter = opts.dataConverter ?? (await kilnDataConverter());
  const connection = opts.connection ?? (await NativeConnection.connect({ address: settings.address }));
  const deps = opts.deps ?? defaultDeps();
  const searchAttributes = await ensureSearchAttributes(connection, settings.namespace);
  const activities = createActivities(deps);
  const workflowBundle_ = await workflowBundle(converter.keyId !== undefined);
  const taskQueue = opts.taskQueue ?? settings.taskQueue ?? DEFAULT_TASK_QUEUE;
  const versioning = await versioningFor(connection, settings.namespace, taskQueue, workflowBundle_.code, opts.versioning ?? {});
  const shared = await Worker.create({
    connection,
    dataConverter: converter.dataConverter,
    namespace: settings.namespace,
    taskQueue,
    workerDeploymentOptions: deploymentOptions(versioning.version),
    workflowBundle: workflowBundle_,
    activities,
    interceptors: { activity: [retryTrace] },
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    defaultHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_WAIT,
    shutdownForceTime: opts.forceStopAfterMs ?? WORKER_FORCE_STOP_MS,
  });
  // unversioned: a host queue belongs to one machine, not to a build; a pinned run's activities
  // reach its worktree's host whichever build that host runs (activity inputs stay compatible)
  const host = await Worker.create({
    connection,
    namespace: settings.namespace,
    taskQueue: deps.hostQueue,
    dataConverter: converter.dataConverter,
    activities,
    interceptors: { activity: [retryTrace] },
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    defaultHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    shutdownForceTime: opts.forceStopAfterMs ?? WORKER_FORCE_STOP_MS,
  });
  // commands start in a small helper process: forking this big one blocks its event loop (spawn.ts)
  const releaseSpawner = useSpawner();
  const run = Promise.all([shared.run(), host.run()]).then(() => undefined);
  let versioningLine = versioning.line;
  if (versioning.version) {
    const v = versioning.version;
    // the server knows a version only from its workers' polls, so this waits for the first ones
    try {
      versioningLine = `versioning: ${await Promise.race([
        takeNewRuns(connection, settings.namespace, v, opts.versioning?.takeNewRuns ?? 'if-none'),
        run.then(() => 'the worker stopped before it was registered'),
      ])}`;
    } catch (err) {
      shared.shutdown();
      host.shutdown();
      await run.catch(() => undefined);
      releaseSpawner();
      if (!opts.connection) await connection.close();
      throw err;
    }
  }
  const fleetGauges =
    opts.fleetGauges &&
    startFleetGauges({
      connection,
      meter: Runtime.instance().metricMeter,
      namespace: settings.namespace,
      taskQueue,
      intervalMs: opts.fleetGauges.intervalMs,
      log: opts.fleetGauges.log ?? ((line) => process.stderr.write(`${line}\n`)),
    });
  let stopping: Promise<void> | undefined;
  return {
    hostQueue: deps.hostQueue,
    searchAttributes,
    codec: codecStatus(converter),
    version: versioning.version,
    versioning: versioningLine,
    fleetGauges,
    run,
    // idempotent: Ctrl-C handlers and callers may both ask
    shutdown() {
      stopping ??= (async () => {
        fleetGauges?.stop();
        if (shared.getState() === 'RUNNING') shared.shutdown();
        if (host.getState() === 'RUNNING') host.shutdown();
        await run
          .catch((err: unknown) => {
            // the bound was reached (the SDK then also fails to release the native worker the stuck
            // activity still holds): what did not end is retried on the next worker, the stop goes on
            const e = err as Error;
            if (e?.name !== 'GracefulShutdownPeriodExpiredError' && !(e?.name === 'IllegalStateError' && /still in use/.test(e.message))) throw err;
            process.stderr.write(
              `kiln worker: activities that did not end within ${(opts.forceStopAfterMs ?? WORKER_FORCE_STOP_MS) / 1000} s of the stop were left to the next worker\n`,
            );
          })
          .finally(() => {
            // their cgroups too: the spawner's exit kills the processes, not the cgroups
            discardKeptSandboxes({ idleOnly: true });
            releaseSpawner();
          });
        if (!opts.connection) await connection.close();
      })();
      return stopping;
    },
  };
}

// `node dist/src/worker.js`: a worker process on its own (tests start it as a real child process).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const metrics = installMetricsRuntime(kilnSettings().metricsAddr);
  startWorker({ fleetGauges: metrics ? {} : undefined })
    .then(async (w) => {
      process.stdout.write(`kiln worker ready (pid ${process.pid}, host queue ${w.hostQueue})\n`);
      process.stdout.write(`${w.searchAttributes}\n`);
      process.stdout.write(`${w.codec}\n`);
      process.stdout.write(`${metricsStatus(metrics)}\n`);
      process.stdout.write(`${w.versioning}\n`);
      process.stdout.write(`${await sandboxStatus()}\n`);
      process.stdout.write(`${operatorStatus(defaultDeps().operator)}\n`);
      process.stdout.write(`${modelStatus()}\n`);
      return w.run;
    })
    .catch((err: unknown) => {
      process.stderr.write(`kiln worker: ${(err as Error).message}\n`);
      process.exit(1);
    });
}
