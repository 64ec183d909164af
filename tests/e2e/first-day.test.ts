/**
 * What a new user tripped over on their first day, each as they met it: a port that is already
 * taken, `kiln approve` right after the worker stopped, a live view whose server restarts, a
 * worker asked to stop while its server is gone, long goals from a file, and the small
 * conventions (--version, help pointers, cancel of an ended run).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { KILN_VERSION } from '../../src/shared/version.js';
import type { RunState } from '../../src/shared/types.js';
import { exampleRepo } from '../helpers/repo.js';
import { GOAL, SCRIPT, exitOf, kiln, lastLine, sleep, spawnKiln, until, userEnv, type Live } from './cli.js';

const procs: Live[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
  for (const s of servers) s.close();
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer(() => undefined);
    servers.push(s);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

describe('conventions that need no server', () => {
  it('--version and -V print the version', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await kiln([flag], { env: userEnv() });
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(KILN_VERSION);
    }
  });

  it('a missing required option points to the help of that very command', async () => {
    const r = await kiln(['reject', 'some-run', 'ap-1'], { env: userEnv() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/--reason.*\(see `kiln reject --help`\)$/);
  });

  it('--goal-file that does not exist, and --goal with --goal-file: one line, exit 2', async () => {
    const repo = exampleRepo('kiln-e2e-goal-');
    const a = await kiln(['run', '--repo', repo, '--goal-file', '/nope/goal.md', '--model', SCRIPT], { env: userEnv() });
    expect(a.code).toBe(2);
    expect(a.stderr.trim()).toBe('kiln: --goal-file "/nope/goal.md": no such file');
    const b = await kiln(['run', '--repo', repo, '--goal', 'x', '--goal-file', '/nope/goal.md', '--model', SCRIPT], { env: userEnv() });
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/give the goal once/);
  });

  it('kiln dev on a taken port fails and says so, printing no success banner', async () => {
    const port = await freePort();
    await listen(port);
    const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-clash-'));
    const r = await kiln(['dev', '--port', String(port), '--ui-port', String(await freePort()), '--db', join(home, 't.db')], {
      env: userEnv({ KILN_HOME: home }),
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(new RegExp(`^kiln: port ${port} on 127\\.0\\.0\\.1 is taken by another program`));
    expect(r.stdout).not.toMatch(/Web UI|Ctrl-C stops everything/);

    // a taken Web UI port is caught too, before anything starts
    const uiPort = await freePort();
    await listen(uiPort);
    const u = await kiln(['dev', '--port', String(await freePort()), '--ui-port', String(uiPort), '--db', join(home, 'u.db')], {
      env: userEnv({ KILN_HOME: home }),
      timeoutMs: 60_000,
    });
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(new RegExp(`Web UI port ${uiPort} .* taken`));
  });
});

describe('a server and a worker that come and go', () => {
  it('approve right after the worker stopped is recorded at once and applies when a worker runs; a live view survives a server restart', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-day1-'));
    const db = join(home, 'temporal.db');
    const env = { ...userEnv({ KILN_HOME: home }), TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
    const server = async () => {
      const s = spawnKiln(['dev', '--no-worker', '--port', String(port), '--ui-port', String(uiPort), '--db', db], { env });
      procs.push(s);
      await s.waitFor('Ctrl-C stops everything', 90_000);
      return s;
    };
    const worker = async () => {
      const w = spawnKiln(['worker'], { env });
      procs.push(w);
      await w.waitFor('kiln worker ready');
      return w;
    };
    let srv = await server();
    let wk = await worker();

    const repo = exampleRepo('kiln-e2e-day1-', home);
    const id = `day1-${process.pid}`;
    const goalFile = join(home, 'goal.md');
    writeFileSync(goalFile, `${GOAL}\n\nA second paragraph, as long goals have.\n`);
    const started = await kiln(['run', '--repo', repo, '--goal-file', goalFile, '--model', SCRIPT, '--id', id, '--detach'], {
      env,
    });
    expect(started.code, started.stderr).toBe(0);
    await until('the run waits for approval', async () => {
      const r = await kiln(['status', id, '--json'], { env });
      return (JSON.parse(r.stdout || '{}') as Partial<RunState>).pendingApprovals?.length ? true : undefined;
    });

    // the same id with another goal attaches, and says so
    const again = await kiln(['run', '--repo', repo, '--goal', 'something else entirely', '--model', SCRIPT, '--id', id, '--detach'], { env });
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe(`attached to ${id}`);
    expect(again.stderr).toMatch(/^warning: run day1-\d+ already exists with another goal \("getSession returns/m);

    // the server still lists the stopped worker as a poller for a while: the Update must not hang
    // (a hang meets the call's own timeout and fails; how long the wait is belongs to the bench, not here)
    wk.child.kill('SIGTERM');
    expect((await exitOf(wk, 30_000)).code).toBe(0);
    const a = await kiln(['approve', id, 'ap-1'], { env, timeoutMs: 60_000 });
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(
      /recorded as a Signal \((no worker is running|no worker answered within \d+ s)\); the run applies it when a worker of its build takes the run/,
    );

    // a live view across a server restart: it says it lost contact, then carries on
    const wait = spawnKiln(['wait', id, '--json'], { env });
    procs.push(wait);
    // the view must be attached before the server goes: on a loaded machine starting the CLI takes seconds
    await sleep(8000);
    srv.child.kill('SIGINT');
    expect((await exitOf(srv)).code).toBe(0);
    await until('the live view says it lost contact', async () => /lost contact with the Temporal server/.test(wait.stderr()), 30_000).catch((e: Error) => {
      throw new Error(`${e.message}\nwait stderr:\n${wait.stderr()}\nwait stdout:\n${wait.stdout()}`);
    });
    srv = await server();
    // the view says it is back as soon as the server answers, not when the run ends
    await until('the live view says it reconnected', async () => /reconnected to the Temporal server/.test(wait.stderr()), 60_000);
    wk = await worker();
    // usually seconds; twice in CI the run had not moved 180 s after the restarts ("no worker
    // answers queries"). Suspected: the task queue's versioning data reaching a partition only
    // with matching's user-data long poll (matching.getUserDataLongPollTimeout, 4 min 50 s)
    const { code } = await exitOf(wait, 330_000).catch(async (e: Error) => {
      // where the run was when it did not end: its state and what the worker said
      const st = await kiln(['status', id], { env, timeoutMs: 30_000 }).catch(() => undefined);
      throw new Error(`${e.message}\nkiln status:\n${st?.stdout ?? ''}${st?.stderr ?? ''}\nworker stderr:\n${wk.stderr().slice(-4000)}`);
    });
    expect(code, wait.stderr()).toBe(0);
    const r = JSON.parse(lastLine(wait.stdout())) as { state: string };
    expect(r.state).toBe('succeeded');

    // the long goal from the file is whole in the state, short in `kiln status`
    const st = await kiln(['status', id], { env });
    expect(st.stdout).toMatch(/goal: +getSession returns revoked sessions.*… \(\d+ chars: kiln status --json has it whole\)/);

    // cancelling an ended run says so instead of "requested"
    const c = await kiln(['cancel', id], { env });
    expect(c.code).toBe(1);
    expect(c.stderr.trim()).toBe(`kiln: ${id} already ended (completed): nothing to cancel`);

    // a worker asked to stop while its server is gone exits within its grace period
    srv.child.kill('SIGINT');
    expect((await exitOf(srv)).code).toBe(0);
    await sleep(1000);
    wk.child.kill('SIGTERM');
    const stopped = await exitOf(wk, 40_000);
    expect(stopped.code).toBe(0);
    // the host queue's worker has no workflows by design; Core's retries are DEBUG detail
    expect(wk.stderr()).not.toMatch(/No workflows registered|gRPC call .* retried/);
  }, 600_000);
});
