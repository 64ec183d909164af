/**
 * The embedded Temporal dev server: `temporal server start-dev` with a SQLite file, so runs
 * survive a restart of the server itself.
 */
import { Connection } from '@temporalio/client';
import { execa, type ResultPromise } from 'execa';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { SEARCH_ATTRIBUTES } from './search-attributes.js';
import { startUiGuard } from './ui-guard.js';

export interface DevServerOptions {
  binary: string;
  dbFile: string;
  ip?: string;
  port: number;
  uiPort: number;
  namespace?: string;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  process: ResultPromise;
  stop(): Promise<void>;
}

export async function startDevServer(o: DevServerOptions): Promise<DevServer> {
  await mkdir(dirname(o.dbFile), { recursive: true });
  const ip = o.ip ?? '127.0.0.1';
  // the UI itself listens on a loopback port of its own; people reach it through the guard on uiPort
  const innerUiPort = await loopbackPort();
  const args = [
    'server', 'start-dev',
    '--db-filename', o.dbFile,
    '--ip', ip,
    '--port', String(o.port),
    '--ui-ip', '127.0.0.1',
    '--ui-port', String(innerUiPort),
    '--namespace', o.namespace ?? 'default',
    '--log-level', 'error',
    ...SEARCH_ATTRIBUTES.flatMap((a) => ['--search-attribute', `${a.name}=${a.type}`]),
  ];
  const child = execa(o.binary, args, { reject: false, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', cleanup: true });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const address = `${ip}:${o.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`temporal dev server exited (${child.exitCode}) before it was ready: ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    }
    try {
      const c = await Connection.connect({ address, connectTimeout: 1000 });
      await c.workflowService.getSystemInfo({});
      await c.close();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`temporal dev server did not become ready at ${address} within 60 s: ${stderr.trim().slice(-500)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  let guard;
  try {
    guard = await startUiGuard({ port: o.uiPort, upstreamPort: innerUiPort });
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`the Web UI port ${o.uiPort} is not free on 127.0.0.1: ${(err as Error).message}`);
  }
  return {
    address,
    uiUrl: guard.url,
    process: child,
    async stop() {
      await guard.close();
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await child;
      clearTimeout(timer);
    },
  };
}

function loopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}
