/** Connection settings follow Temporal's own conventions: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE. */
import { Client, Connection } from '@temporalio/client';
import { connect } from 'node:net';
import { DEFAULT_TASK_QUEUE } from '../shared/constants.js';
import { KilnError } from '../shared/errors.js';
import { kilnDataConverter, type KilnDataConverter } from '../codec/data-converter.js';
import { settingsFrom } from '../settings.js';

/** True when nothing listens at host:port (the dial is refused or the name does not resolve). */
function tcpRefused(address: string): Promise<boolean> {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = connect({ host: m[1], port: Number(m[2]) });
    const done = (refused: boolean) => {
      socket.destroy();
      resolve(refused);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('connect', () => done(false));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED' || err.code === 'ENOTFOUND' || err.code === 'EADDRNOTAVAIL'));
  });
}

/** No Temporal server at the address: the user starts one or fixes TEMPORAL_ADDRESS (exit 2); it may come up later. */
export class TemporalUnreachableError extends KilnError {
  override name = 'TemporalUnreachableError';
  readonly retryable = true;
  override readonly exitCode = 2;
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** the shared queue; KILN_TASK_QUEUE separates deployments (and tests) on one server */
  taskQueue: string;
}

export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  return {
    address: env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: settingsFrom(env).taskQueue ?? DEFAULT_TASK_QUEUE,
  };
}

/**
 * How long a client tries to reach the server. Measured: 50 `kiln run --detach` at once against a
 * busy dev server, a 3 s connect failed 27 of them; each try now gets 10 s and the whole a minute.
 * A refused connection (nothing listens) is not load: it is said after a few seconds.
 */
export const CONNECT_ATTEMPT_MS = 10_000;
export const CONNECT_DEADLINE_MS = 60_000;
export const REFUSED_GIVE_UP_MS = 3_000;

export async function connectClient(
  s: TemporalSettings = temporalSettings(),
  opts: { deadlineMs?: number; attemptMs?: number; dataConverter?: KilnDataConverter } = {},
): Promise<{ client: Client; connection: Connection }> {
  // the keys first: a bad keyring is the user's to fix, however far the server is
  const { dataConverter } = opts.dataConverter ?? (await kilnDataConverter());
  const started = Date.now();
  const deadline = started + (opts.deadlineMs ?? CONNECT_DEADLINE_MS);
  let wait = 200;
  let last: unknown;
  for (;;) {
    // gRPC says only "failed to connect before the deadline"; a plain TCP dial tells nobody-home from busy
    if (await tcpRefused(s.address)) {
      last = new Error('connection refused');
      if (Date.now() - started > REFUSED_GIVE_UP_MS) break;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 2000);
      continue;
    }
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address: s.address, connectTimeout: opts.attemptMs ?? CONNECT_ATTEMPT_MS });
      await connection.workflowService.getSystemInfo({});
    } catch (err) {
      last = err;
      await connection?.close().catch(() => undefined);
      if (Date.now() + wait > deadline) break;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 2000);
      continue;
    }
    // outside the retries: the client loads the data converter's files here, and a file that is
    // missing is this installation's fault, said at once (it was retried for a minute and called
    // "cannot reach Temporal")
    try {
      return { client: new Client({ connection, namespace: s.namespace, dataConverter }), connection };
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }
  const why = String((last as Error)?.message ?? last)
    .split('\n')[0]!
    .slice(0, 200);
  throw new TemporalUnreachableError(
    `cannot reach Temporal at ${s.address} (tried for ${Math.round((Date.now() - started) / 1000)} s: ${why}): start the embedded server with \`kiln dev\` (or set TEMPORAL_ADDRESS to your cluster)`,
  );
}
