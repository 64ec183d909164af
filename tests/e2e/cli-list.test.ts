/**
 * `kiln list --phase` as a user runs it, against a dev server with Kiln's search attributes and a
 * worker: a run waiting for approval is found by its phase, a finished one by its own; and on a
 * server without the attributes the filter is refused in one line while a plain `kiln list` works.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { kiln, userEnv } from './cli.js';

const queue = `kiln-list-${process.pid}`;
let t: WorkflowTestEnv;
let bare: TestWorkflowEnvironment;

beforeAll(async () => {
  t = await workflowTestEnv(queue);
  const path = findTemporalCli();
  // a server as someone else may run it: no Kiln search attributes
  bare = await TestWorkflowEnvironment.createLocal({ server: path ? { executable: { type: 'existing-path', path } } : {} });
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await bare?.teardown();
});

function input(steps: object[]) {
  const repo = repoWith({ 'a.txt': 'one\n', 'package.json': JSON.stringify({ name: 'l', scripts: { lint: 'node -e 0' } }) });
  const script = writeScript(join(repo, '..'), 'list', { name: 'list', steps });
  return testInput({ repo, model: `scripted:${script}`, allowUnverified: true, searchAttributes: true });
}

/** `kiln list --json` with the args, run again until the visibility store has caught up */
async function listUntil(args: string[], ok: (ids: string[]) => boolean): Promise<string[]> {
  const env = userEnv({ TEMPORAL_ADDRESS: t.env.address });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await kiln(['list', '--json', ...args], { env });
    expect(r.code, r.stderr).toBe(0);
    const ids = r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { runId: string }).runId);
    if (ok(ids) || Date.now() > deadline) return ids;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('kiln list --phase', () => {
  it('finds the waiting run by its phase and the finished one by its own', async () => {
    const waiting = await t.start(
      input([
        { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'lint' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ]),
    );
    const done = await t.start(
      input([
        { tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ]),
    );
    await t.waitFor(waiting, (s) => s.pendingApprovals.length > 0);
    expect((await done.result()).state).toBe('succeeded');

    const awaiting = await listUntil(['--phase', 'awaiting_approval'], (ids) => ids.includes(waiting.workflowId));
    expect(awaiting).toContain(waiting.workflowId);
    expect(awaiting).not.toContain(done.workflowId);
    const succeeded = await listUntil(['--phase', 'succeeded'], (ids) => ids.includes(done.workflowId));
    expect(succeeded).toContain(done.workflowId);
    expect(succeeded).not.toContain(waiting.workflowId);

    // a phase that is not one is the user's to fix: said in one line, nothing listed
    const bad = await kiln(['list', '--phase', 'waiting'], { env: userEnv({ TEMPORAL_ADDRESS: t.env.address }) });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--phase waiting: expected one of .*awaiting_approval/);
    await waiting.terminate('test over');
  }, 120_000);

  it("on a server without Kiln's search attributes: the filter is refused in one line, a plain list still works", async () => {
    const env = userEnv({ TEMPORAL_ADDRESS: bare.address });
    const refused = await kiln(['list', '--phase', 'awaiting_approval'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toMatch(/this server does not have Kiln's search attributes, so runs cannot be filtered: start `kiln worker` once/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    const plain = await kiln(['list'], { env });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain('no runs yet');
  }, 60_000);
});
