/**
 * A Kiln worker: workflows and prepareWorkspace on the shared queue; everything that touches a
 * worktree on this host's own queue (Temporal's worker-specific task queues pattern), so a run's
 * activities always reach the machine that holds its worktree.
 */
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createActivities, defaultDeps, type ActivityDeps } from './activities/index.js';
import { createSandbox } from './sandbox/index.js';
import { DEFAULT_TASK_QUEUE } from './shared/constants.js';
import { temporalSettings, type TemporalSettings } from './temporal/connection.js';
import { registerSearchAttributes, SearchAttributePermissionError } from './temporal/register-search-attributes.js';

/**
 * Always the compiled workflows: the bundler then sees plain JS whether this module runs from
 * dist/ or from source under vitest (`npm test` builds first).
 */
export const WORKFLOWS_PATH = join(packageRoot(), 'dist', 'src', 'workflows', 'index.js');

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

export interface RunningWorker {
  hostQueue: string;
  /** what start-up did about Kiln's search attributes, in one line for the operator */
  searchAttributes: string;
  run: Promise<void>;
  shutdown(): Promise<void>;
}

/** The start-up probe, said once so an operator sees at start whether commands will run. */
export async function sandboxStatus(): Promise<string> {
  try {
    await createSandbox({ mode: 'bwrap' });
    return 'sandbox: bubblewrap probe passed (no writes outside the worktree, no HOME, no network)';
  } catch (err) {
    return `sandbox: UNAVAILABLE — run_command will be refused unless a run uses --sandbox off: ${(err as Error).message}`;
  }
}

/**
 * Fleet queries need Kiln's search attributes on the server; a worker registers the missing ones.
 * A client without the permission still runs work: the line says who must add them.
 */
async function ensureSearchAttributes(connection: NativeConnection, namespace: string): Promise<string> {
  try {
    const r = await registerSearchAttributes(connection, namespace);
    return r.added.length ? `search attributes: added ${r.added.join(', ')}` : 'search attributes: all present';
  } catch (err) {
    if (err instanceof SearchAttributePermissionError) return `search attributes: NOT REGISTERED — ${err.message}`;
    throw err;
  }
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
/** Bundled once per process: several workers (shared + host queue) reuse it. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  return bundle;
}

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never;

export async function startWorker(opts: {
  settings?: TemporalSettings;
  connection?: NativeConnection;
  taskQueue?: string;
  deps?: ActivityDeps;
} = {}): Promise<RunningWorker> {
  const settings = opts.settings ?? temporalSettings();
  const connection = opts.connection ?? (await NativeConnection.connect({ address: settings.address }));
  const deps = opts.deps ?? defaultDeps();
  const searchAttributes = await ensureSearchAttributes(connection, settings.namespace);
  const activities = createActivities(deps);
  const workflowBundle_ = await workflowBundle();
  const shared = await Worker.create({
    connection,
    namespace: settings.namespace,
    taskQueue: opts.taskQueue ?? settings.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowBundle: workflowBundle_,
    activities,
  });
  const host = await Worker.create({
    connection,
    namespace: settings.namespace,
    taskQueue: deps.hostQueue,
    activities,
  });
  const run = Promise.all([shared.run(), host.run()]).then(() => undefined);
  let stopping: Promise<void> | undefined;
  return {
    hostQueue: deps.hostQueue,
    searchAttributes,
    run,
    // idempotent: Ctrl-C handlers and callers may both ask
    shutdown() {
      stopping ??= (async () => {
        if (shared.getState() === 'RUNNING') shared.shutdown();
        if (host.getState() === 'RUNNING') host.shutdown();
        await run;
        if (!opts.connection) await connection.close();
      })();
      return stopping;
    },
  };
}

// `node dist/src/worker.js`: a worker process on its own (tests start it as a real child process).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  startWorker()
    .then(async (w) => {
      process.stdout.write(`kiln worker ready (pid ${process.pid}, host queue ${w.hostQueue})\n`);
      process.stdout.write(`${w.searchAttributes}\n`);
      process.stdout.write(`${await sandboxStatus()}\n`);
      return w.run;
    })
    .catch((err: unknown) => {
      process.stderr.write(`kiln worker: ${(err as Error).message}\n`);
      process.exit(1);
    });
}
