/**
 * What one turn cannot go below on this machine, measured beside the side-by-side trials so the
 * goal of 15 ms a turn can be read against them (docs/bench.md):
 * - a Temporal hand-off: a no-op activity on another task queue, back to the workflow and out to
 *   the next one, through the same dev server — the hop every durable turn makes;
 * - one sandboxed `echo` through Kiln's sandbox, from a spawner as the worker starts commands.
 */
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { installQuietRuntime } from '../src/temporal/quiet-runtime.js';
import { useSpawner } from '../src/process/spawn.js';
import { createSandbox } from '../src/sandbox/index.js';
import type { DevServer } from '../src/temporal/dev-server.js';
import { activityHops } from './history.js';
import { spread, type Spread } from './stats.js';

export interface Floors {
  /** activity completed → the next activity started, by the server's clock */
  handoffMs: Spread;
  /** one sandboxed `echo` through Kiln's sandbox, spawn to exit */
  sandboxedEchoMs?: Spread;
  /** why the sandbox floor is missing (no bwrap here, or --sandbox off) */
  sandboxNote?: string;
}

/** the compiled workflow beside the compiled bench, the source when tests import the bench from source */
const WORKFLOWS = fileURLToPath(new URL(`./floor-workflow${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export async function measureFloors(o: { server: DevServer; rounds: number; sandbox: 'bwrap' | 'off' }): Promise<Floors> {
  const queue = `kiln-floor-${randomBytes(4).toString('hex')}`;
  installQuietRuntime('WARN');
  const connection = await NativeConnection.connect({ address: o.server.address });
  const client = new Client({ connection: await Connection.connect({ address: o.server.address }) });
  const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  // both workers get both, as Kiln's do (and neither warns that it polls for one kind alone)
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quiet });
  const activities = { noop: async (i: number) => i };
  const workflows = await Worker.create({ connection, taskQueue: queue, workflowBundle, activities });
  const host = await Worker.create({ connection, taskQueue: `${queue}-host`, workflowBundle, activities });
  const running = Promise.all([workflows.run(), host.run()]);
  let handoffMs: Spread;
  try {
    const id = `${queue}-pingpong`;
    await client.workflow.execute('floorPingPong', { taskQueue: queue, workflowId: id, args: [o.rounds, `${queue}-host`] });
    handoffMs = spread(activityHops(await client.workflow.getHandle(id).fetchHistory()), 1);
  } finally {
    workflows.shutdown();
    host.shutdown();
    await running;
    await client.connection.close();
    await connection.close();
  }
  if (o.sandbox === 'off') return { handoffMs, sandboxNote: 'not measured: --sandbox off' };
  const release = useSpawner();
  const dir = mkdtempSync(join(tmpdir(), 'kiln-floor-'));
  try {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    const ms: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      const t = performance.now();
      const r = await sandbox.run(`echo turn ${i}`, { workspace: dir, timeoutMs: 30_000 });
      if (r.exitCode !== 0) throw new Error(`the sandboxed echo failed (exit ${r.exitCode}): ${r.output.slice(-300)}`);
      ms.push(performance.now() - t);
    }
    return { handoffMs, sandboxedEchoMs: spread(ms, 1) };
  } catch (err) {
    return { handoffMs, sandboxNote: `not measured: ${(err as Error).message.split('\n')[0]}` };
  } finally {
    release();
    rmSync(dir, { recursive: true, force: true });
  }
}
