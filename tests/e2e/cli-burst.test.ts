/**
 * A burst of 50 `kiln run --detach` at once against one dev server. Before the CLI
 * connected with retries and a longer deadline, 27 of 50 failed with "cannot reach Temporal"
 * while the server was up. Every start must land, each as one workflow with its own id.
 * No worker runs: the runs wait on the queue and are terminated at the end (SCRIPTED model).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { exampleRepo } from '../helpers/repo.js';
import { startTestServer } from '../helpers/temporal.js';
import { GOAL, kiln, SCRIPT, userEnv } from './cli.js';

const BURST = Number(process.env.KILN_BURST) || 50;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await startTestServer();
});
afterAll(async () => {
  await env?.teardown();
});

describe('a burst of starts', () => {
  it(`${BURST} × \`kiln run --detach\` at once: every one starts its run, none says "cannot reach"`, async () => {
    const repo = exampleRepo('kiln-burst-');
    const userEnvironment = userEnv({ TEMPORAL_ADDRESS: env.address, KILN_TASK_QUEUE: `burst-${Date.now()}` });
    const ids = Array.from({ length: BURST }, (_, i) => `burst-${i}-${Date.now().toString(36)}`);
    const t0 = Date.now();
    const results = await Promise.all(
      ids.map((id) =>
        kiln(['run', '--detach', '--repo', repo, '--goal', GOAL, '--model', SCRIPT, '--id', id], { env: userEnvironment, timeoutMs: 240_000 }).then((r) => ({
          ...r,
          id,
          ms: Date.now() - t0,
        })),
      ),
    );
    const failed = results.filter((r) => r.code !== 0);
    const slowest = Math.max(...results.map((r) => r.ms));
    console.log(`burst: ${BURST - failed.length}/${BURST} started, all within ${(slowest / 1000).toFixed(1)} s (SCRIPTED runs, no worker)`);
    expect(failed.map((r) => `${r.id}: ${r.stderr.trim().split('\n').pop()}`)).toEqual([]);
    for (const r of results) expect(r.stdout.trim()).toBe(`started ${r.id}`);
    for (const id of ids) {
      const d = await env.client.workflow.getHandle(id).describe();
      expect(d.status.name).toBe('RUNNING');
      await env.client.workflow.getHandle(id).terminate('burst test over');
    }
  }, 300_000);
});
