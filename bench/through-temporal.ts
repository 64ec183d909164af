/**
 * The run as users get it: the official CLI's dev server (SQLite file, as `kiln` embeds it),
 * a real worker in this process on a task queue of its own, the workflow started the way the
 * CLI starts it. The history is fetched before the server stops.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { installQuietRuntime } from '../src/temporal/quiet-runtime.js';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultDeps } from '../src/activities/index.js';
import { startRun } from '../src/client/runs.js';
import type { RunInput, RunResult } from '../src/shared/types.js';
import { findTemporalCli } from '../src/temporal/binary.js';
import { freePort, startDevServer } from '../src/temporal/dev-server.js';
import { startWorker } from '../src/worker.js';
import { measureHistory, type HistoryFigures } from './history.js';
import { TurnClock } from './turn-clock.js';

export interface TemporalRunFigures {
  result: RunResult;
  clock: TurnClock;
  /** performance.now() just before the start request */
  startedAt: number;
  finishedAt: number;
  serverStartMs: number;
  workerStartMs: number;
  history: HistoryFigures;
}

export async function runThroughTemporal(input: RunInput, o: { tmp: string; log: (s: string) => void }): Promise<TemporalRunFigures> {
  const binary = findTemporalCli();
  if (!binary) throw new Error('no Temporal CLI binary found: run `npm run setup` (or set KILN_TEMPORAL_CLI)');
  // the worker's INFO lines (state changes) would drown the report; warnings still show
  installQuietRuntime('WARN');
  let t = performance.now();
  const server = await startDevServer({ binary, dbFile: join(o.tmp, 'temporal.db'), port: await freePort(), uiPort: await freePort() });
  const serverStartMs = performance.now() - t;
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  const queue = `kiln-bench-${randomBytes(4).toString('hex')}`;
  const clock = new TurnClock();
  try {
    t = performance.now();
    const worker = await startWorker({
      connection: native,
      settings: { address: server.address, namespace: 'default', taskQueue: queue },
      deps: clock.wrap({ ...defaultDeps(), hostQueue: `${queue}-host` }),
    });
    const workerStartMs = performance.now() - t;
    o.log(`  dev server ready in ${(serverStartMs / 1000).toFixed(1)} s, worker in ${(workerStartMs / 1000).toFixed(1)} s (queue ${queue})`);
    try {
      const client = new Client({ connection, namespace: 'default' });
      const startedAt = performance.now();
      const { handle } = await startRun(client, input, { taskQueue: queue });
      const result = await handle.result();
      const finishedAt = performance.now();
      if (result.state !== 'succeeded') throw new Error(`the Temporal run ended ${result.state}: ${result.reason ?? ''}`);
      const history = measureHistory(await handle.fetchHistory(), result.turns);
      return { result, clock, startedAt, finishedAt, serverStartMs, workerStartMs, history };
    } finally {
      await worker.shutdown();
    }
  } finally {
    await native.close();
    await connection.close();
    await server.stop();
  }
}
