/**
 * Crash resume with real worker processes: the worker kills itself (SIGKILL) at a named point,
 * a fresh worker process finishes the run, and the result is the same patch as an undisturbed run.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveSignal, cancelRequestSignal, statusQuery } from '../../src/shared/messages.js';
import type { RunInput, RunResult, RunState } from '../../src/shared/types.js';
import type { kilnRun } from '../../src/workflows/run.js';
import { EXAMPLE_SCRIPT, ROOT, exampleRepo, repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { expectCancelledByAlice } from '../helpers/cancelled-run.js';
import { startTestServer } from '../helpers/temporal.js';
import { spawnWorker, type WorkerProcess } from '../helpers/worker-process.js';
import { recording, untilAsked, untilState } from '../helpers/workflow-env.js';
import { outcome } from '../../src/client/runs.js';
import { startFaultServer, type FaultReply } from '../../src/model/fault-server.js';
import { ledgerTotal, servedTotal } from '../helpers/ledger.js';
import { cleanWorktrees } from '../../src/cli/actions/clean.js';

let env: TestWorkflowEnvironment;
let address: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  env = await startTestServer();
  address = env.address;
});

afterAll(async () => {
  for (const w of workers) await w.kill9();
  await env?.teardown();
});

let n = 0;
function scenario(crashAt?: string) {
  const id = `crash-${process.pid}-${++n}`;
  const markers = mkdtempSync(join(tmpdir(), 'kiln-markers-'));
  const wenv: Record<string, string> = {
    TEMPORAL_ADDRESS: address,
    KILN_TASK_QUEUE: id,
    KILN_HOST: id,
    KILN_TEST_CRASH_MARKERS: markers,
    ...(crashAt ? { KILN_TEST_CRASH_AT: crashAt } : {}),
  };
  return {
    queue: id,
    async worker(extra: Record<string, string> = {}) {
      const w = await spawnWorker({ ...wenv, ...extra });
      workers.push(w);
      return w;
    },
    async start(input: RunInput) {
      return recording(await env.client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: input.runId, taskQueue: id, args: [input] }), input);
    },
  };
}

type Handle = Awaited<ReturnType<ReturnType<typeof scenario>['start']>>;

async function state(h: Handle): Promise<RunState | undefined> {
  try {
    return await h.query(statusQuery);
  } catch {
    return undefined;
  }
}

/** The CLI as a person runs it, against this scenario's queue. */
function kiln(queue: string, args: string[]) {
  return execa(process.execPath, [join(ROOT, 'bin', 'kiln.js'), ...args], {
    env: { ...process.env, KILN_HOME: testKilnHome(), TEMPORAL_ADDRESS: address, KILN_TASK_QUEUE: queue },
    reject: false,
    timeout: 60_000,
  });
}

async function approveWhenAsked(h: Handle): Promise<void> {
  for (;;) {
    const st = await state(h);
    if (st?.pendingApprovals.length) {
      await h.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: true, by: 'test' });
      return;
    }
    if (st && ['succeeded', 'blocked', 'cancelled'].includes(st.phase)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * A run started on a fresh worker of `sc` (the example, unless `over` says otherwise), whose
 * worker is killed once the run asks for an approval: no worker runs now.
 */
async function killedWhileAsked(
  sc: ReturnType<typeof scenario>,
  over: Partial<RunInput> = {},
  workerEnv: Record<string, string> = {},
): Promise<{ h: Handle; input: RunInput; st: RunState }> {
  const first = await sc.worker(workerEnv);
  const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}`, ...over });
  const h = await sc.start(input);
  const st = await untilAsked(h, 120_000);
  await first.kill9();
  return { h, input, st };
}

/** Runs the example with a crash at `point`; returns the result and the patch. */
async function crashRun(
  point: string,
  over: Partial<RunInput> = {},
): Promise<{ r: RunResult; patch: string; first: WorkerProcess; killedAt: number; secondReadyAt: number }> {
  const sc = scenario(point);
  const first = await sc.worker();
  const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}`, ...over });
  const h = await sc.start(input);
  const approving = approveWhenAsked(h);
  let killedAt = 0;
  const code = await Promise.race([
    first.exited.then((c) => {
      killedAt = Date.now();
      return c;
    }),
    outcome(h).then(() => 'finished' as const),
  ]);
  expect(code, `the worker should have crashed at ${point}; output:\n${first.output()}`).not.toBe('finished');
  expect(first.output()).toContain(`test crash point ${point}`);
  await sc.worker();
  const secondReadyAt = Date.now();
  await approving;
  const r = await outcome(h);
  return { r, patch: readFileSync(r.patchPath, 'utf8'), first, killedAt, secondReadyAt };
}

/** From the kill to the retried activity's start, as the run's own record says (events.jsonl). */
function recoveryMs(r: RunResult, killedAt: number, activity: string): number {
  const retry = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; at: string; activity?: string; attempt?: number })
    .find((e) => e.type === 'activity_retry' && e.activity === activity);
  expect(retry, `no retry of ${activity} recorded`).toBeDefined();
  return Date.parse(retry!.at) - killedAt;
}

/** pids whose command line holds the marker (pgrep itself excluded; exit 1 means none) */
function pgrep(marker: string): string {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

let undisturbed: Promise<string> | undefined;

/** The patch of an undisturbed run of the example: every crash must end with the same one. */
function reference(): Promise<string> {
  undisturbed ??= (async () => {
    const sc = scenario();
    await sc.worker();
    const input = testInput({ repo: exampleRepo(), model: `scripted:${EXAMPLE_SCRIPT}` });
    const h = await sc.start(input);
    await approveWhenAsked(h);
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    return readFileSync(r.patchPath, 'utf8');
  })();
  return undisturbed;
}

/** The activities a run records as retried after a crash (events.jsonl). */
function retries(r: RunResult): Array<{ activity?: string; attempt?: number }> {
  return readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; activity?: string; attempt?: number })
    .filter((e) => e.type === 'activity_retry');
}

/** A run of the example whose worker was killed while its verification's checks were about to run; no worker runs now. */
let scenarioWorker: () => Promise<WorkerProcess>;
async function killedInVerification(): Promise<{ h: Handle; repo: string }> {
  const sc = scenario('verify-checks');
  scenarioWorker = () => sc.worker();
  const first = await sc.worker();
  const repo = exampleRepo();
  // a long heartbeat timeout: the killed attempt is not retried before the test ends the run
  const h = await sc.start(testInput({ repo, model: `scripted:${EXAMPLE_SCRIPT}`, heartbeatTimeoutMs: 120_000 }));
  // the example asks to run its linter before it finishes: answered before the verification starts
  await approveWhenAsked(h);
  await first.exited;
  expect(first.output()).toContain('test crash point verify-checks');
  return { h, repo };
}

/** The run's checkouts under .kiln/verify and their `git worktree` entries. */
function verifyLeftovers(repo: string, runId: string): { dirs: string[]; entries: string[] } {
  const root = join(repo, '.kiln', 'verify');
  const dirs = existsSync(root) ? readdirSync(root).filter((n) => n.startsWith(`${runId}-`)) : [];
  const entries = execFileSync('git', ['-C', repo, 'worktree', 'list', '--porcelain'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.startsWith('worktree ') && l.includes(join('.kiln', 'verify', `${runId}-`)));
  return { dirs, entries };
}

describe('crash resume (kill -9 of a real worker process)', () => {
  it('an undisturbed run, for reference', async () => {
    expect(await reference()).toContain('.filter((s) => !s.revokedAt)');
  });

  it('during a model turn: a new worker finishes with the same patch', async () => {
    const { r, patch, killedAt } = await crashRun('model-turn@3');
    expect(r.state).toBe('succeeded');
    expect(patch).toBe(await reference());
    console.log(`recovery after a kill during a model call: ${(recoveryMs(r, killedAt, 'agentTurn') / 1000).toFixed(1)} s at heartbeat timeout 3 s`);
    // the record says where the run was retried
    expect(retries(r)).toContainEqual(expect.objectContaining({ activity: 'agentTurn', attempt: 2 }));
  });

  it('recovery time follows the heartbeat timeout: with 10 s, a killed model call is retried in ~10-12 s', async () => {
    const { r, patch, killedAt, secondReadyAt } = await crashRun('model-turn@3', { heartbeatTimeoutMs: 10_000 });
    expect(r.state).toBe('succeeded');
    expect(patch).toBe(await reference());
    const ms = recoveryMs(r, killedAt, 'agentTurn');
    console.log(`recovery after a kill during a model call: ${(ms / 1000).toFixed(1)} s at heartbeat timeout 10 s`);
    // the retry waits for the heartbeat timeout: it cannot come sooner (a figure, not a speed test)
    expect(ms).toBeGreaterThanOrEqual(9_000);
    // nor much later: once the timeout has passed and a worker is up, the retry is dispatched at
    // once (a run that ignored its timeout would wait the default 30 s). The new worker's start-up
    // is not the server's doing, so the bound counts from whichever came last.
    const retryAt = killedAt + ms;
    const due = Math.max(killedAt + 10_000, secondReadyAt);
    expect(retryAt - due, `retried ${((retryAt - due) / 1000).toFixed(1)} s after it was due`).toBeLessThan(8_000);
  }, 180_000);

  it('during verification: the checks run again on a new worker, and the run ships the verified tree', async () => {
    const { r, patch } = await crashRun('verify');
    expect(r.state).toBe('succeeded');
    expect(patch).toBe(await reference());
    expect(retries(r)).toContainEqual(expect.objectContaining({ activity: 'verify', attempt: 2 }));
    const st = JSON.parse(readFileSync(join(r.artifactsDir, 'state.json'), 'utf8')) as RunState;
    expect(st.verdict?.tree ?? '', 'the verdict names the tree it verified').toMatch(/^[0-9a-f]{40}$/);
  }, 180_000);

  it('during the checks of a verification: the run ships the verified tree and leaves no pristine checkout or worktree entry behind', async () => {
    const { r, patch } = await crashRun('verify-checks');
    expect(r.state).toBe('succeeded');
    expect(patch).toBe(await reference());
    expect(retries(r)).toContainEqual(expect.objectContaining({ activity: 'verify', attempt: 2 }));
    const repo = (JSON.parse(readFileSync(join(r.artifactsDir, 'state.json'), 'utf8')) as RunState).repo;
    expect(verifyLeftovers(repo, r.runId)).toEqual({ dirs: [], entries: [] });
  }, 180_000);

  it('during the checks of a verification, then cancelled: the run ends without leaving its pristine checkout or worktree entry', async () => {
    const { h, repo } = await killedInVerification();
    await h.cancel();
    await scenarioWorker();
    await expect(h.result()).rejects.toThrow();
    expect((await h.describe()).status.name).toBe('CANCELLED');
    expect(verifyLeftovers(repo, h.workflowId)).toEqual({ dirs: [], entries: [] });
  }, 180_000);

  it('during the checks of a verification, then terminated: kiln clean removes the checkout and its worktree entry, and says so', async () => {
    const { h, repo } = await killedInVerification();
    await h.terminate('the test ends it with no worker');
    const before = verifyLeftovers(repo, h.workflowId);
    expect(before.dirs, 'the kill left a checkout: the case clean is for').toHaveLength(1);
    const r = await cleanWorktrees(env.client, { repo });
    expect(r.removed).toEqual([h.workflowId]);
    expect(r.removedCheckouts).toEqual([{ name: before.dirs[0], runId: h.workflowId }]);
    expect(verifyLeftovers(repo, h.workflowId)).toEqual({ dirs: [], entries: [] });
  }, 180_000);

  it('after an edit is written but before its result is reported: the edit is not applied twice', async () => {
    const { r, patch } = await crashRun('after-edit-write');
    expect(r.state).toBe('succeeded');
    // the new text contains the old text: applying it twice would filter twice
    expect(patch.match(/\.filter\(/g)).toHaveLength(1);
    expect(patch).toBe(await reference());
  });

  it('while awaiting approval, with the approval sent while no worker runs', async () => {
    const sc = scenario();
    const { h, st } = await killedWhileAsked(sc);
    // no worker: the signal is stored by the server and applied when one comes back
    await h.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: true, by: 'offline approver' });
    await sc.worker();
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(r.patchPath, 'utf8')).toBe(await reference());
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toContain('offline approver');
  });

  it('approved right after a restart: the new worker answers the Update in about a second, not after waiting out the dead worker (10 s)', async () => {
    const sc = scenario();
    const { h, input, st } = await killedWhileAsked(sc);
    await sc.worker();
    const id = st.pendingApprovals[0]!.id;
    const t0 = Date.now();
    const a = await kiln(sc.queue, ['approve', input.runId, id, '--by', 'after restart']);
    const ms = Date.now() - t0;
    expect(a.exitCode, a.stderr).toBe(0);
    // answered by the new worker as an Update, not sent as a Signal after waiting out the dead one
    expect(a.stdout.trim()).toBe(`approved ${id}`);
    // the CLI's own start-up is most of this on a loaded machine; waiting out the dead worker's queue was 10 s more
    expect(ms).toBeLessThan(9000);
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toContain('after restart');
  });

  it('approved while no live worker holds the run: the answer says it was recorded as a Signal, and it applies once a worker runs', async () => {
    const sc = scenario();
    const { h, input, st } = await killedWhileAsked(sc);
    // the server still lists the killed worker as polling, so the CLI tries an Update first
    const a = await kiln(sc.queue, ['approve', input.runId, st.pendingApprovals[0]!.id, '--by', 'nobody listening']);
    expect(a.exitCode, a.stderr).toBe(0);
    expect(a.stdout).toMatch(
      /recorded as a Signal \((no worker is running|no worker answered within \d+ s)\); the run applies it when a worker of its build takes the run/,
    );
    await sc.worker();
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toContain('nobody listening');
  });

  it('during a running command: nothing of it survives, and an unsafe command is not re-run', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const marker = `kiln-crash-${process.pid}-${Date.now()}`;
    const script = writeScript(join(repo, '..'), 'long-command', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: `touch started.txt; sleep 30 # ${marker}`, reason: 'a long job' } }] },
        {
          expect: { tool_result_contains: 'outcome of this command is unknown' },
          tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }],
        },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const sc = scenario('command-running');
    const first = await sc.worker();
    const h = await sc.start(testInput({ repo, model: `scripted:${script}`, sandbox: 'bwrap', allowUnverified: true }));
    await first.exited;
    await new Promise((r) => setTimeout(r, 500));
    expect(existsSync(join(repo, '.kiln', 'worktrees', h.workflowId, 'started.txt')), 'the command had really started').toBe(true);
    const survivors = pgrep(marker);
    expect(survivors, 'a process of the killed attempt survived').toBe('');
    await sc.worker();
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(r.patchPath, 'utf8')).toContain('+two');
    expect(existsSync(join(r.artifactsDir, 'events.jsonl'))).toBe(true);
  });

  it('just after a command ended (its completion journaled): the retry reports how it ended, and it is not run again', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    // writes (not safe to repeat), prints, and fails: each part of its outcome must reach the model
    const command = 'echo ran >> count.txt; echo kiln-finished-output; exit 3';
    const script = writeScript(join(repo, '..'), 'finished-command', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command, reason: 'a job that must not run twice' } }] },
        {
          // the output itself, after its status line (the command line above it names it too)
          expect: { tool_result_contains: 'exit code 3\nkiln-finished-output', user_contains: 'this command changed 1 file(s): count.txt' },
          tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }],
        },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const sc = scenario('command-finished');
    const first = await sc.worker();
    const h = await sc.start(testInput({ repo, model: `scripted:${script}`, sandbox: 'bwrap', allowUnverified: true }));
    await first.exited;
    const killedAt = Date.now();
    expect(first.output()).toContain('test crash point command-finished');
    await sc.worker();
    const r = await outcome(h);
    expect(r.state, r.reason).toBe('succeeded');
    const patch = readFileSync(r.patchPath, 'utf8');
    expect(patch.match(/^\+ran$/gm), 'the command ran once').toHaveLength(1);
    expect(patch).toContain('+two');
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).not.toContain('outcome of this command is unknown');
    // the command ran inside the turn activity (it takes turns ahead): that activity is retried
    console.log(
      `a kill just after a command ended: the turn is retried ${(recoveryMs(r, killedAt, 'agentTurn') / 1000).toFixed(1)} s later (heartbeat timeout 3 s)`,
    );
  });

  it('killed while a cancel stops it: a new worker still ends the run cancelled, with who cancelled and its clean-up', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const marker = `kiln-cancel-crash-${process.pid}-${Date.now()}`;
    const script = writeScript(join(repo, '..'), 'cancel-crash', {
      steps: [{ tool_use: [{ name: 'run_command', input: { command: `touch started.txt; sleep 30 # ${marker}`, reason: 'a long job' } }] }],
    });
    const sc = scenario();
    const first = await sc.worker();
    const input = testInput({ repo, model: `scripted:${script}`, sandbox: 'bwrap', allowUnverified: true, heartbeatTimeoutMs: 3000 });
    const h = await sc.start(input);
    const started = join(repo, '.kiln', 'worktrees', input.runId, 'started.txt');
    const deadline = Date.now() + 30_000;
    while (!existsSync(started)) {
      if (Date.now() > deadline) throw new Error(`the command never started; worker output:\n${first.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await h.signal(cancelRequestSignal, { by: 'alice', reason: 'wrong goal' });
    await h.cancel();
    // the worker dies while the cancel is on its way to the command: the activity ends by its heartbeat timeout
    await new Promise((r) => setTimeout(r, 300));
    await first.kill9();
    await sc.worker();
    await expect(h.result()).rejects.toThrow();
    expect((await h.describe()).status.name).toBe('CANCELLED');
    expectCancelledByAlice(repo, input.runId);
    expect(pgrep(marker), 'a process of the killed attempt survived').toBe('');
  });

  it('during a turn an activity went on to take: the turns before it are not taken again', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const append = (word: string) => ({ tool_use: [{ name: 'run_command', input: { command: `echo ${word} >> trail.txt`, reason: 'a step' } }] });
    const script = writeScript(join(repo, '..'), 'turns-ahead-crash', {
      steps: [append('one'), append('two'), append('three'), { tool_use: [{ name: 'finish', input: { summary: 'done' } }] }],
    });
    const sc = scenario('model-turn@3');
    // however slow this machine is, turns 1 to 3 ride in one activity
    const first = await sc.worker({ KILN_TURNS_AHEAD_MS: '60000' });
    const h = await sc.start(testInput({ repo, model: `scripted:${script}`, allowUnverified: true }));
    await first.exited;
    expect(first.output()).toContain('test crash point model-turn@3');
    await sc.worker({ KILN_TURNS_AHEAD_MS: '60000' });
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    // the retried activity walked turns 1 and 2 from what they stored: no command ran twice
    expect(readFileSync(r.patchPath, 'utf8')).toMatch(/^\+one\n\+two\n\+three\n/m);
    expect(retries(r)).toContainEqual(expect.objectContaining({ activity: 'agentTurn', attempt: 2 }));
    const scheduled = ((await h.fetchHistory()).events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'agentTurn');
    expect(scheduled).toHaveLength(1);
    // and no model call was paid for twice
    const answered = readFileSync(join(r.artifactsDir, 'model-calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; turn?: number; call: string })
      .filter((e) => e.event === 'answered');
    expect(answered.map((e) => e.call.split(':').pop())).toEqual(['1', '2', '3', '4']);
  });

  it('after the API billed a reply and before the turn saved it: the ledger counts every reply served, once', async () => {
    const api = await startFaultServer();
    try {
      const repo = repoWith({ 'a.txt': 'one\n' });
      const call = (name: string, input: unknown): FaultReply => ({ content: [{ type: 'tool_use', name, input }] });
      const addB = call('create_file', { path: 'b.txt', content: 'b\n' });
      // the first answer is billed (its message_delta sent) and never ends: the worker is killed while it waits
      api.push(
        { fault: 'held', reply: addB },
        addB,
        call('run_command', { command: 'test -f b.txt', reason: 'the check' }),
        call('finish', { summary: 'done' }),
      );
      const sc = scenario();
      const modelEnv = { ANTHROPIC_API_KEY: 'sk-fault', ANTHROPIC_BASE_URL: api.url };
      const first = await sc.worker(modelEnv);
      const h = await sc.start(testInput({ repo, model: 'claude-sonnet-4-6', checks: ['test -f b.txt'], maxAttempts: 1 }));
      const deadline = Date.now() + 60_000;
      while (!api.requests.some((q) => q.answer === 'held')) {
        if (Date.now() > deadline) throw new Error('the model was never asked');
        await new Promise((res) => setTimeout(res, 50));
      }
      // the worker has read the reply's usage well within this; the turn cannot be saved before message_stop
      await new Promise((res) => setTimeout(res, 1500));
      await first.kill9();
      await sc.worker(modelEnv);
      const r = await outcome(h);
      expect(r.state).toBe('succeeded');
      expect(api.requests.map((q) => q.answer)).toEqual(['held', 'reply', 'reply', 'reply']);
      expect(ledgerTotal(r)).toEqual(servedTotal(api.requests));
    } finally {
      await api.close();
    }
  });

  it('a host that is gone for good: the worktree is rebuilt on another host from the last checkpoint', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    const script = writeScript(join(repo, '..'), 'host-loss', {
      steps: [
        { tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'mytool lint', reason: 'the team linter' } }] },
        { expect: { user_contains: 'machine that ran this task was lost' }, tool_use: [{ name: 'read_file', input: { path: 'a.txt' } }] },
        { expect: { tool_result_contains: 'two' }, tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const sc = scenario();
    const { h, st } = await killedWhileAsked(
      sc,
      { repo, model: `scripted:${script}`, hostLossTimeoutMs: 3000, allowUnverified: true },
      { KILN_HOST: `${sc.queue}-a` },
    );
    expect(st.hostQueue).toBe(`kiln-host-${sc.queue}-a`);
    // host a never comes back; host b only serves the shared queue and its own
    await sc.worker({ KILN_HOST: `${sc.queue}-b` });
    await h.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: true, by: 'test' });
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(r.patchPath, 'utf8')).toContain('+two');
    const events = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events).toContainEqual(expect.objectContaining({ type: 'rebuild', applied: true, files: ['a.txt'], host: `kiln-host-${sc.queue}-b` }));
    const after = await h.query(statusQuery);
    expect(after.hostQueue).toBe(`kiln-host-${sc.queue}-b`);
    expect(after.log.map((l) => l.text).join('\n')).toMatch(/rebuilt on kiln-host-.*-b: your changes up to turn 2 were restored \(a\.txt\)/);
  });

  it('a host lost after its setup was approved: the rebuild runs that approved setup again on another host, without asking again', async () => {
    const repo = repoWith({ 'a.txt': 'one\n', '.kiln/policy.json': JSON.stringify({ approvals: { setup: ['echo*'] } }) });
    const script = writeScript(join(repo, '..'), 'host-loss-setup', {
      steps: [
        { tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'mytool lint', reason: 'the team linter' } }] },
        { expect: { user_contains: 'machine that ran this task was lost' }, tool_use: [{ name: 'read_file', input: { path: 'setup-marker.txt' } }] },
        { expect: { tool_result_contains: 'fetched' }, tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const sc = scenario();
    const first = await sc.worker({ KILN_HOST: `${sc.queue}-a` });
    const input = testInput({ repo, model: `scripted:${script}`, hostLossTimeoutMs: 3000, allowUnverified: true, setup: ['echo fetched > setup-marker.txt'] });
    const h = await sc.start(input);
    const setup = await untilAsked(h, 120_000);
    expect(setup.pendingApprovals[0]).toMatchObject({ id: 'ap-1', tool: 'setup' });
    await h.signal(approveSignal, { approvalId: 'ap-1', approve: true, by: 'carol' });
    const asked = await untilState(h, (s) => s.pendingApprovals.some((a) => a.id === 'ap-2'), 120_000);
    expect(asked.setupApproved).toMatch(/^[0-9a-f]{64}$/);
    await first.kill9();
    await sc.worker({ KILN_HOST: `${sc.queue}-b` });
    await h.signal(approveSignal, { approvalId: 'ap-2', approve: true, by: 'carol' });
    const r = await outcome(h);
    expect(r.state, r.reason).toBe('succeeded');
    const after = await h.query(statusQuery);
    expect(after.hostQueue).toBe(`kiln-host-${sc.queue}-b`);
    // the setup was asked about once: the rebuild ran what was approved
    const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; id?: string; what?: string; by?: string });
    expect(audit.filter((e) => e.kind === 'approval').map((e) => [e.id, e.what?.split(':')[0], e.by])).toEqual([
      ['ap-1', 'setup', 'carol'],
      ['ap-2', 'run_command', 'carol'],
    ]);
    expect(after.pendingApprovals).toEqual([]);
    const events = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; ok?: boolean; held?: string });
    expect(events.filter((e) => e.type === 'setup').map((e) => (e.held ? 'held' : e.ok ? 'ran' : '?'))).toEqual(['held', 'ran', 'ran']);
  });

  it("parallel attempts: the parent's worker is killed, a new one takes over, and cancelling the parent leaves no child running", async () => {
    const sc = scenario();
    const first = await sc.worker();
    const lint = { name: 'run_command', input: { command: 'npm run lint', reason: 'lint first' } };
    const script = writeScript(join(exampleRepo('kiln-script-'), '..'), 'fan-crash', {
      steps: [{ tool_use: [lint] }, { tool_use: [{ name: 'finish', input: { summary: 'done' } }] }],
    });
    const input = testInput({ repo: exampleRepo(), model: `scripted:${script}`, attempts: 2 });
    const h = await sc.start(input);
    const children = [1, 2].map((i) => env.client.workflow.getHandle<typeof kilnRun>(`${input.runId}-a${i}`));
    for (const c of children) await untilState(c, (s) => s.phase === 'awaiting_approval', 120_000);
    const worktrees = await Promise.all(children.map(async (c) => (await state(c))!.worktree!));
    await first.kill9();
    await sc.worker();
    await h.cancel();
    await expect(h.result()).rejects.toThrow();
    expect((await h.describe()).status.name).toBe('CANCELLED');
    for (const [i, c] of children.entries()) {
      expect((await c.describe()).status.name).toBe('CANCELLED');
      expect(existsSync(worktrees[i]!), worktrees[i]).toBe(false);
    }
  });
});
