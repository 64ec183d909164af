/**
 * A worker asked to stop while an activity will not end (a model call that ignores its cancel, a
 * server that cannot record the completion because its disk is full): it stops within its bound.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defaultDeps } from '../../src/activities/index.js';
import type { ModelClient } from '../../src/model/index.js';
import { startWorker } from '../../src/worker.js';
import { EXAMPLE_SCRIPT, exampleRepo } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { startTestServer } from '../helpers/temporal.js';

const env = await startTestServer();
afterAll(async () => {
  await env.teardown();
});

describe('stopping a worker', () => {
  it('an activity that never ends does not hold the stop: the worker gives up on it after its bound', async () => {
    let asked!: () => void;
    const modelAsked = new Promise<void>((r) => (asked = r));
    const stuck: ModelClient = {
      scripted: true,
      model: 'stuck',
      create: () => {
        asked();
        // ignores its abort signal: nothing ever settles it
        return new Promise(() => undefined);
      },
    };
    const queue = 'kiln-worker-stop';
    const worker = await startWorker({
      connection: env.nativeConnection,
      settings: { address: env.address, namespace: 'default', taskQueue: queue },
      deps: { ...defaultDeps(), hostQueue: `${queue}-host`, model: async () => stuck },
      forceStopAfterMs: 3000,
    });
    const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}` });
    await env.client.workflow.start('kilnRun', { workflowId: input.runId, taskQueue: queue, args: [input] });
    await modelAsked;
    const t0 = Date.now();
    await Promise.race([worker.shutdown(), new Promise((_, reject) => setTimeout(() => reject(new Error('the worker did not stop within 20 s')), 20_000))]);
    expect(Date.now() - t0).toBeLessThan(15_000);
  }, 60_000);
});
