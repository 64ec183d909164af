/**
 * The budget ledger when a worker process is killed (SIGKILL) in the middle of a fan-out: the
 * ledger, read by `kiln budget show`, equals what the model API (the fault server, a test double
 * for the model only) served, to the token, and holds nothing once the run has ended.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { execa } from 'execa';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcome } from '../../src/client/runs.js';
import { startFaultServer, type FaultReply, type FaultServer } from '../../src/model/fault-server.js';
import type { LedgerView } from '../../src/shared/budget-ledger.js';
import type { kilnRun } from '../../src/workflows/run.js';
import { servedTotal } from '../helpers/ledger.js';
import { ROOT, repoWith, testKilnHome } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { startTestServer } from '../helpers/temporal.js';
import { spawnWorker, type WorkerProcess } from '../helpers/worker-process.js';

let env: TestWorkflowEnvironment;
let api: FaultServer;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  env = await startTestServer();
  api = await startFaultServer();
});
afterAll(async () => {
  for (const w of workers) await w.kill9();
  await api?.close();
  await env?.teardown();
});

const call = (name: string, input: unknown): FaultReply => ({ content: [{ type: 'tool_use', name, input }] });
const addB = call('create_file', { path: 'b.txt', content: 'b\n' });
const check = call('run_command', { command: 'test -f b.txt', reason: 'the check' });
const finish = call('finish', { summary: 'done' });

/** The CLI as a person runs it, against this test's queue. */
function kiln(queue: string, args: string[]) {
  return execa(process.execPath, [join(ROOT, 'bin', 'kiln.js'), ...args], {
    env: { ...process.env, KILN_HOME: testKilnHome(), TEMPORAL_ADDRESS: env.address, KILN_TASK_QUEUE: queue },
    reject: false,
    timeout: 60_000,
  });
}

describe('the budget ledger across a killed worker', () => {
  it('a worker killed while a fan-out child waits on a billed reply: kiln budget show equals what the API served, and nothing stays held', async () => {
    const queue = `crash-budget-${process.pid}`;
    const wenv = {
      TEMPORAL_ADDRESS: env.address,
      KILN_TASK_QUEUE: queue,
      KILN_HOST: queue,
      KILN_TEST_CRASH_MARKERS: mkdtempSync(join(tmpdir(), 'kiln-markers-')),
      ANTHROPIC_API_KEY: 'sk-fault',
      ANTHROPIC_BASE_URL: api.url,
    };
    // the first answer is billed (message_delta sent) and never ends: the worker dies while a child waits on it;
    // the children take the rest in whatever order they ask (the ledger's sum does not depend on it)
    api.push({ fault: 'held', reply: addB }, addB, check, finish, addB, check, finish, check, finish);
    api.setDefault({ fault: 'status', status: 400, type: 'invalid_request_error', message: 'the test queued no more answers' });
    const first = await spawnWorker(wenv);
    workers.push(first);
    // the operator's limit, set the way a person sets it (a worker runs the ledger): far above this run, so nothing parks
    const set = await kiln(queue, ['budget', 'set', '--tenant-wide', '--usd', '1000', '--by', 'operator']);
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/tenant: billed 0 tokens .*limit: \$1000\.000000/);
    const repo = repoWith({ 'a.txt': 'one\n' });
    const input = testInput({ repo, model: 'claude-sonnet-4-6', checks: ['test -f b.txt'], maxAttempts: 1, attempts: 2 });
    const h = await env.client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: input.runId, taskQueue: queue, args: [input] });
    const deadline = Date.now() + 60_000;
    while (!api.requests.some((q) => q.answer === 'held')) {
      if (Date.now() > deadline) throw new Error(`the model was never asked: ${first.output()}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    // the reply's usage is read (and settled) well within this; the turn cannot be saved before message_stop
    await new Promise((res) => setTimeout(res, 1500));
    await first.kill9();
    workers.push(await spawnWorker(wenv));
    const r = await outcome(h);
    expect(['succeeded', 'blocked']).toContain(r.state);
    expect(api.requests.filter((q) => q.served).length).toBeGreaterThan(2);

    const shown = await kiln(queue, ['budget', 'show', '--json']);
    expect(shown.exitCode, shown.stderr).toBe(0);
    const view = JSON.parse(shown.stdout) as LedgerView;
    const served = servedTotal(api.requests);
    for (const scope of ['tenant', `repo:${repo}`, `parent:${input.runId}`]) {
      const s = view.scopes.find((x) => x.scope === scope)!;
      expect({ scope, input: s.used.input, output: s.used.output }).toEqual({ scope, ...served });
      expect(s.held.calls, `${scope} still holds a reservation`).toBe(0);
    }
    expect(view.open).toBe(0);
    expect(view.scopes.find((x) => x.scope === 'tenant')!.limit).toEqual({ usd: 1000 });
  });
});
