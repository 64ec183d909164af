/** `kiln worker`: a worker against TEMPORAL_ADDRESS, workflows plus this host's activities. */
import type { Command } from 'commander';
import { connectClient } from '../with-run.js';
import { settings as kilnSettings } from '../../settings.js';

interface WorkerFlags {
  allowSandboxOff?: boolean;
  buildId?: string;
  deployment?: string;
  takeNewRuns?: boolean;
  versioning: boolean;
  metrics?: string;
  runCeilings?: string;
}

/** How long `kiln worker` waits for its tasks in hand on SIGTERM/SIGINT before it exits anyway. */
const SHUTDOWN_GRACE_MS = kilnSettings().shutdownGraceMs ?? 15_000;

export function addWorkerCommand(program: Command, out: (s: string) => void): void {
  program
    .command('worker')
    .summary('Run a worker against TEMPORAL_ADDRESS')
    .description("Run a worker against TEMPORAL_ADDRESS (workflows plus this host's activities)")
    .option('--allow-sandbox-off', 'let runs ask for --sandbox off (unsafe; also KILN_ALLOW_SANDBOX_OFF=1)')
    .option('--build-id <id>', "this worker's build (also KILN_BUILD_ID; default: Kiln's version and a hash of the workflow code)")
    .option('--deployment <name>', 'the Worker Deployment it belongs to (also KILN_DEPLOYMENT; default: the task queue, kiln)')
    .option('--take-new-runs', 'make this build current at start even if another one is (default: only when none is)')
    .option('--no-versioning', 'run unversioned: runs are not pinned to a build (also KILN_VERSIONING=off)')
    .option('--metrics <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics (also KILN_METRICS_ADDR)')
    .option('--run-ceilings <field=value,...>', 'the most a run may ask for, e.g. budgets.maxUsd=50 (also KILN_RUN_CEILINGS; docs/threat-model.md)')
    .action((o: WorkerFlags) => runWorker(o, out));
}

async function runWorker(o: WorkerFlags, out: (s: string) => void): Promise<void> {
  // bad flags are said before anything starts (a Temporal Runtime would keep the process alive after the error)
  const { checkBuildId, deploymentNameFor } = await import('../../temporal/deployment.js');
  const { temporalSettings } = await import('../../temporal/connection.js');
  const { runCeilingsFrom } = await import('../../policy/run-ceilings.js');
  if (o.runCeilings !== undefined) runCeilingsFrom(o.runCeilings, '--run-ceilings');
  else runCeilingsFrom(kilnSettings().runCeilings);
  const versioned = o.versioning && !kilnSettings().versioningOff;
  const envBuild = kilnSettings().buildId;
  const buildId = !versioned
    ? undefined
    : o.buildId !== undefined
      ? checkBuildId(o.buildId, '--build-id')
      : envBuild
        ? checkBuildId(envBuild, 'KILN_BUILD_ID')
        : undefined;
  const deploymentName = versioned
    ? deploymentNameFor(temporalSettings().taskQueue, o.deployment === undefined ? process.env : { ...process.env, KILN_DEPLOYMENT: o.deployment })
    : undefined;
  const { installQuietRuntime } = await import('../../temporal/quiet-runtime.js');
  const { metricsAddress, metricsStatus } = await import('../../temporal/metrics.js');
  const metrics = o.metrics
    ? metricsAddress(o.metrics, '--metrics')
    : kilnSettings().metricsAddr !== undefined
      ? metricsAddress(kilnSettings().metricsAddr!)
      : undefined;
  // a worker on its own keeps warnings (e.g. "server unreachable, retrying"); not state chatter
  installQuietRuntime('WARN', process.env, metrics);
  // until the worker runs, a stop request ends the process at once: connecting may retry
  // for a long time, and systemd or docker stop must not hang on it
  const early = (sig: NodeJS.Signals) => {
    out(`stopped (${sig}) before the worker started`);
    process.exit(sig === 'SIGTERM' ? 143 : 130);
  };
  process.once('SIGINT', early);
  process.once('SIGTERM', early);
  const { startWorker, sandboxStatus, operatorStatus, modelStatus } = await import('../../worker.js');
  const { defaultDeps } = await import('../../activities/index.js');
  await connectClient().then(({ connection }) => connection.close());
  const deps = defaultDeps({
    ...process.env,
    ...(o.allowSandboxOff ? { KILN_ALLOW_SANDBOX_OFF: '1' } : {}),
    ...(o.runCeilings !== undefined ? { KILN_RUN_CEILINGS: o.runCeilings } : {}),
  });
  const w = await startWorker({
    deps,
    versioning: {
      buildId,
      deploymentName,
      off: versioned ? undefined : true,
      takeNewRuns: o.takeNewRuns ? 'always' : 'if-none',
    },
    fleetGauges: metrics ? { log: out } : undefined,
  });
  process.removeListener('SIGINT', early);
  process.removeListener('SIGTERM', early);
  out(`kiln worker ready (host queue ${w.hostQueue}); Ctrl-C stops it`);
  out(w.searchAttributes);
  out(w.codec);
  out(metricsStatus(metrics));
  out(w.versioning);
  out(await sandboxStatus());
  out(operatorStatus(deps.operator));
  out(modelStatus());
  // the SDK stops polling on SIGINT by itself, but its connection would keep Node running
  let stopping: Promise<void> | undefined;
  const shutdown = () => (stopping ??= w.shutdown());
  const stop = () => {
    out('stopping: finishing the tasks in hand…');
    void shutdown();
    // a graceful stop waits for the server; one that is gone must not hold the process
    // (systemd and `docker stop` would hang): tasks in hand are retried by another worker
    setTimeout(() => {
      out(
        `stopped without finishing: the tasks in hand did not end within ${SHUTDOWN_GRACE_MS / 1000} s (is the Temporal server reachable?); Temporal retries them elsewhere`,
      );
      process.exit(0);
    }, SHUTDOWN_GRACE_MS).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await w.run;
  await shutdown();
}
