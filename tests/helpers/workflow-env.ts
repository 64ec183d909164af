/** One dev server and one in-process worker per test file, with helpers to start and watch runs. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../../src/shared/messages.js';
import type { RunInput, RunState } from '../../src/shared/types.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { defaultDeps, type ActivityDeps } from '../../src/activities/index.js';
import type { kilnRun } from '../../src/workflows/run.js';
import { startTestServer } from './temporal.js';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

export type RunHandle = WorkflowHandle<typeof kilnRun>;

export async function saveHistory(handle: RunHandle, dir: string, input: RunInput): Promise<void> {
  const history = await handle.fetchHistory();
  const name = `${basename(input.model.replace(/^scripted:/, ''), '.json')}-${input.runId}.json`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), historyToJSON(history));
}

/** With KILN_RECORD_HISTORIES set, saves the history of a workflow that never finishes (the budget ledger) as NAME.json. */
export async function recordOpen(handle: WorkflowHandle, name: string): Promise<void> {
  const dir = process.env.KILN_RECORD_HISTORIES;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), historyToJSON(await handle.fetchHistory()));
}

/**
 * `KILN_RECORD_HISTORIES=dir npx vitest run tests/workflow` saves every finished run's history;
 * the replay tests keep a chosen few in tests/replay/histories/.
 */
export function recording(handle: RunHandle, input: RunInput): RunHandle {
  const dir = process.env.KILN_RECORD_HISTORIES;
  if (!dir) return handle;
  const result = handle.result.bind(handle);
  handle.result = async () => {
    try {
      return await result();
    } finally {
      await saveHistory(handle, dir, input);
    }
  };
  return handle;
}

/**
 * The run's status once `pred` holds, asked every 150 ms for at most `ms`. A query no worker
 * answers (killed, not up yet) is asked again; the timeout says the last state or error.
 */
export async function untilState(handle: RunHandle, pred: (s: RunState) => boolean, ms = 60_000): Promise<RunState> {
  const deadline = Date.now() + ms;
  for (;;) {
    let said: string;
    try {
      const st = await handle.query(statusQuery);
      if (pred(st)) return st;
      said = `state: ${st.phase} — ${st.log.map((l) => l.text).join(' | ')}`;
    } catch (err) {
      said = `the status query failed: ${(err as Error).message}`;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting; ${said}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** The run's status once it asks for an approval. */
export const untilAsked = (handle: RunHandle, ms?: number) => untilState(handle, (s) => s.pendingApprovals.length > 0, ms);

export interface WorkflowTestEnv {
  env: TestWorkflowEnvironment;
  worker: RunningWorker;
  start(input: RunInput): Promise<RunHandle>;
  waitFor(handle: RunHandle, pred: (s: RunState) => boolean, ms?: number): Promise<RunState>;
  stop(): Promise<void>;
}

/**
 * `server`: a second worker (its own queues and deps) on another env's dev server, so a file can run
 * its tests against two worker settings without a second server; its stop() leaves the server up.
 */
export async function workflowTestEnv(
  queue: string,
  deps: Partial<ActivityDeps> = {},
  { server, ...worker_ }: Pick<NonNullable<Parameters<typeof startWorker>[0]>, 'fleetGauges'> & { server?: TestWorkflowEnvironment } = {},
): Promise<WorkflowTestEnv> {
  const env = server ?? (await startTestServer());
  const worker = await startWorker({
    ...worker_,
    connection: env.nativeConnection,
    settings: { address: env.address, namespace: 'default', taskQueue: queue },
    deps: { ...defaultDeps(), hostQueue: `${queue}-host`, ...deps },
  });
  return {
    env,
    worker,
    async start(input) {
      const handle = await env.client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: input.runId, taskQueue: queue, args: [input] });
      return recording(handle, input);
    },
    waitFor: untilState,
    async stop() {
      await worker.shutdown();
      if (!server) await env.teardown();
    },
  };
}
