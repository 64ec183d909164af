/**
 * The Temporal server goes away while a run waits for an approval and comes back on the same
 * SQLite file: the run is still there, the same worker process (`kiln worker`, started once)
 * picks it up again, and `kiln approve` is honoured.
 *
 * Found out here: the worker does not give up while the server is down — its polls fail with
 * "Unavailable" and are retried with backoff (observed for 45 s+ by hand), then resume on
 * their own once the server is back. No worker restart is needed.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import type { RunState } from '../../src/shared/types.js';
import { exampleRepo } from '../helpers/repo.js';
import { GOAL, SCRIPT, exitOf, kiln, lastLine, portOpen, sleep, spawnKiln, until, userEnv, type Live } from './cli.js';

const procs: Live[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
});

describe('server restart while a run waits for approval', () => {
  it('the run survives, the same worker continues, the approval is honoured', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    const home = mkdtempSync(join(tmpdir(), 'kiln-e2e-restart-'));
    const db = join(home, 'temporal.db');
    const env = { ...userEnv({ KILN_HOME: home }), TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
    const server = () => {
      const s = spawnKiln(['dev', '--no-worker', '--port', String(port), '--ui-port', String(uiPort), '--db', db], { env });
      procs.push(s);
      return s;
    };

    const first = server();
    await first.waitFor('Ctrl-C stops everything', 90_000);
    const worker = spawnKiln(['worker'], { env });
    procs.push(worker);
    await worker.waitFor('kiln worker ready');

    const repo = exampleRepo('kiln-e2e-restart-', env.KILN_HOME!);
    const id = `restart-${process.pid}`;
    const started = await kiln(['run', '--repo', repo, '--goal', GOAL, '--model', SCRIPT, '--id', id, '--heartbeat-timeout', '3s', '--detach'], { env });
    expect(started.code, started.stderr).toBe(0);
    const waiting = async () => {
      const r = await kiln(['status', id, '--json'], { env });
      const st = JSON.parse(r.stdout || '{}') as Partial<RunState>;
      return st.pendingApprovals?.length ? st : undefined;
    };
    await until('the run waits for approval', waiting);

    first.child.kill('SIGINT');
    expect((await exitOf(first)).code).toBe(0);
    expect(await portOpen(port)).toBe(false);
    // long enough for several failed polls and their backoff
    await sleep(6000);
    expect(worker.child.exitCode, worker.stderr()).toBeNull();

    const second = server();
    await second.waitFor('Ctrl-C stops everything', 90_000);
    // the same run, from the same SQLite file, still waiting (answered by the same worker)
    const st = await until('the worker answers again', waiting, 60_000);
    expect(st.runId).toBe(id);

    // no run, no approval id: the only run waiting for an approval, its only pending approval
    const a = await kiln(['approve'], { env });
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/approved ap-1|recorded \(no worker/);
    const w = await kiln(['wait', id, '--json'], { env, timeoutMs: 90_000 });
    expect(w.code, w.stdout + w.stderr).toBe(0);
    const r = JSON.parse(lastLine(w.stdout)) as { state: string; artifactsDir: string };
    expect(r.state).toBe('succeeded');
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toMatch(/"approve":true|approved/);
    // never restarted: the one worker process did the rest
    expect(worker.child.exitCode).toBeNull();
    worker.child.kill('SIGINT');
    expect((await exitOf(worker)).code, worker.stderr()).toBe(0);
  }, 180_000);
});
