/**
 * Handing a queued workflow task over again (the admin call `kiln dev` makes for a stranded run
 * whose task the server keeps waiting): against the real dev server, the call is understood, the
 * run's task is taken once by the worker that comes, and a run that does not exist is an error.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defaultDeps } from '../../src/activities/index.js';
import { refreshWorkflowTasks } from '../../src/temporal/redispatch.js';
import { startWorker } from '../../src/worker.js';
import { EXAMPLE_SCRIPT, exampleRepo } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { startTestServer } from '../helpers/temporal.js';

const env = await startTestServer();
afterAll(async () => {
  await env.teardown();
});

describe('handing a workflow task over again', () => {
  it('a task queued with no worker is refreshed, then taken once by the worker that starts', async () => {
    const queue = 'kiln-redispatch';
    const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}` });
    const handle = await env.client.workflow.start('kilnRun', { workflowId: input.runId, taskQueue: queue, args: [input] });
    const ns = await env.client.workflowService.describeNamespace({ namespace: 'default' });
    const nsId = ns.namespaceInfo!.id!;

    await refreshWorkflowTasks(env.address, nsId, handle.workflowId, handle.firstExecutionRunId);
    await refreshWorkflowTasks(env.address, nsId, handle.workflowId, handle.firstExecutionRunId);
    expect((await handle.describe()).raw.pendingWorkflowTask?.state).toBe(1); // still scheduled: nothing was lost or doubled

    const worker = await startWorker({
      connection: env.nativeConnection,
      settings: { address: env.address, namespace: 'default', taskQueue: queue },
      deps: { ...defaultDeps(), hostQueue: `${queue}-host` },
    });
    try {
      const deadline = Date.now() + 60_000;
      let events = (await handle.fetchHistory()).events ?? [];
      while (!events.some((e) => e.activityTaskScheduledEventAttributes) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        events = (await handle.fetchHistory()).events ?? [];
      }
      const firstTask = events.filter((e) => e.workflowTaskStartedEventAttributes?.scheduledEventId?.toString() === '2');
      expect(firstTask).toHaveLength(1);
      await handle.terminate('test over');
    } finally {
      await worker.shutdown();
    }

    await expect(refreshWorkflowTasks(env.address, nsId, 'no-such-run', '01a250fe-cca8-7a85-bb62-1d9ed9daa660')).rejects.toThrow(
      /workflow execution not found/i,
    );
  }, 120_000);
});
