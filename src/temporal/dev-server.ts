/**
 * The embedded Temporal dev server: `temporal server start-dev` with a SQLite file, so runs
 * survive a restart of the server itself.
 */
import { Connection } from '@temporalio/client';
import { execa, type ResultPromise } from 'execa';
import { mkdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { KilnError, UsageError } from '../shared/errors.js';
import { dieWithParent } from '../process/system-paths.js';
import { ownedTempDir } from '../process/owned-dirs.js';
import { isolatedCommand, startHostBridge, type HostBridge } from './netns-bridge.js';
import { SEARCH_ATTRIBUTES } from '../shared/search-attributes.js';
import { startUiGuard, UI_CODEC_PATH, type GuardedCodec } from './ui-guard.js';

/**
 * Dynamic config for agent workloads. An agent run is a long chain of back-to-back tasks; the
 * history service's queue readers are rate-limited per shard (20 polls/s by default, and the dev
 * server has one shard), which made every hand-off wait ~44 ms once the burst was spent.
 * Measured on a no-op activity ping-pong: 94–100 ms → 11–14 ms per activity with these raised.
 */
export const AGENT_DYNAMIC_CONFIG: Record<string, number> = {
  'history.transferProcessorMaxPollRPS': 10_000,
  'history.timerProcessorMaxPollRPS': 10_000,
  'history.visibilityProcessorMaxPollRPS': 10_000,
  'history.outboundProcessorMaxPollRPS': 10_000,
};

/**
 * Worker Versioning (a run finishes on the build that started it): on by default since server
 * 1.28, said here so a server whose defaults differ still takes Kiln's versioned workers.
 */
export const VERSIONING_DYNAMIC_CONFIG: Record<string, boolean> = {
  'system.enableDeploymentVersions': true,
  'frontend.workerVersioningWorkflowAPIs': true,
};

/** AGENT_DYNAMIC_CONFIG and VERSIONING_DYNAMIC_CONFIG as `temporal server start-dev` flags, for every place that starts one. */
export function agentDynamicConfigArgs(): string[] {
  return Object.entries({ ...AGENT_DYNAMIC_CONFIG, ...VERSIONING_DYNAMIC_CONFIG }).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${v}`]);
}

/**
 * The dev server's SQLite file in write-ahead-log mode, synced at checkpoints rather than at every
 * commit: each hand-off between the workflow and its activities is a few commits, and with the
 * default rollback journal (an fsync or more per commit) they waited 10–15 ms each here; with
 * these, 4.5 ms (`npm run bench -- --only turns`, load 1). What is committed survives a crash of
 * the server or of Kiln (the crash tests SIGKILL both); a power loss or kernel crash may lose the
 * last transactions, which a development server may. A cluster's database is its own (docs/cluster.md).
 */
export const SQLITE_PRAGMAS: Record<string, string> = { journal_mode: 'wal', synchronous: 'normal' };

export function sqlitePragmaArgs(): string[] {
  return Object.entries(SQLITE_PRAGMAS).flatMap(([k, v]) => ['--sqlite-pragma', `${k}=${v}`]);
}

/** Bad input (a port to change), so the CLI exits 2. */
export class PortInUseError extends UsageError {
  override name = 'PortInUseError';
}

/** Whether something already listens on ip:port (binding it ourselves is the only honest test). */
export function portTaken(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(true));
    srv.listen(port, ip, () => srv.close(() => resolve(false)));
  });
}

/** What listens on a taken frontend port, as far as one call can tell. */
async function whoListens(address: string): Promise<string> {
  try {
    const c = await Connection.connect({ address, connectTimeout: 1000 });
    const info = await c.workflowService.getSystemInfo({});
    await c.close();
    return `a Temporal server (version ${info.serverVersion || 'unknown'}) — perhaps \`temporal server start-dev\` or another \`kiln dev\``;
  } catch {
    return 'another program (not a Temporal server)';
  }
}

export interface DevServerOptions {
  binary: string;
  dbFile: string;
  ip?: string;
  port: number;
  uiPort: number;
  namespace?: string;
  /** the Web UI's remote codec endpoint, as a person gave it (`kiln dev --codec-endpoint`) */
  codecEndpoint?: string;
  /** Kiln's own codec server: the UI reaches it through the guard, on the UI's origin (ui-guard.ts) */
  codec?: GuardedCodec;
  /** where a crashed start that is tried again is said */
  log?: (s: string) => void;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  process: ResultPromise;
  /** set when the UI could not be put in a network namespace: what a person should know */
  exposure?: string;
  /** with `codec`: the link that lets a browser see encrypted runs decrypted (ui-guard.ts) */
  codecLogin?: string;
  stop(): Promise<void>;
}

/** The server died before it answered (a Go panic exits 2): nothing of it is left running. */
class CrashedBeforeReadyError extends KilnError {
  // a crash while starting (a panic on a fresh database under load) may not come again: worth one more start
  readonly retryable = true;
  /**
   * It lost a port it drew for itself (its HTTP API's): the CLI picks a free one and binds it
   * later, and another program on a busy host can take it in between. The next start draws again.
   */
  get portRace(): boolean {
    return /bind: address already in use/.test(this.message);
  }
}

/** Starts after a lost port race beside the one start more any crash gets. */
const PORT_RACE_STARTS = 3;

/**
 * A start that crashed is tried once more: the server can exit 2 (a Go panic) on a fresh database
 * under load, and the next start on the same file is what a person would do. A start that lost a
 * port it drew itself is tried again up to PORT_RACE_STARTS times, each drawing a new port.
 */
export async function startDevServer(o: DevServerOptions): Promise<DevServer> {
  let crashes = 0;
  let races = 0;
  for (;;) {
    try {
      return await startOnce(o);
    } catch (err) {
      if (!(err instanceof CrashedBeforeReadyError)) throw err;
      if (err.portRace ? ++races > PORT_RACE_STARTS : ++crashes > 1) throw err;
      o.log?.(`warning: ${err.message}; starting it once more`);
    }
  }
}

/** The lines of a server's stderr that say why it died: a Go panic's headline, then the end. */
function whyItDied(stderrHead: string, stderrTail: string): string {
  const headline = stderrHead.split('\n').find((l) => /^(panic|fatal error): /.test(l) || /\b(level=(error|fatal)|"level":"(error|fatal)")/i.test(l));
  const tail = stderrTail.trim().split('\n').slice(-3).join(' ');
  return headline && !tail.includes(headline.trim()) ? `${headline.trim().slice(0, 500)} … ${tail}` : tail;
}

async function startOnce(o: DevServerOptions): Promise<DevServer> {
  await mkdir(dirname(o.dbFile), { recursive: true });
  const ip = o.ip ?? '127.0.0.1';
  // Without this check a second server fails to bind while ours happily connects to the first.
  if (await portTaken(ip, o.port)) {
    throw new PortInUseError(
      `port ${o.port} on ${ip} is taken by ${await whoListens(`${ip}:${o.port}`)}: pick another with --port, or use that server (export TEMPORAL_ADDRESS=${ip}:${o.port}; kiln worker)`,
    );
  }
  if (await portTaken(ip, o.uiPort)) throw new PortInUseError(`Web UI port ${o.uiPort} on ${ip} is taken by another program: pick another with --ui-port`);
  // the UI itself listens on a loopback port of its own; people reach it through the guard on uiPort
  // not the ports asked for: they are free until the server and the guard take them, so the OS may hand one out again
  const innerUiPort = await freePort([o.uiPort, o.port]);
  // a SIGKILLed `kiln dev` leaves it; the next one removes it (process/owned-dirs.ts)
  const sockDir = ownedTempDir('kiln-dev-');
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    o.dbFile,
    '--ip',
    ip,
    '--port',
    String(o.port),
    '--ui-ip',
    '127.0.0.1',
    '--ui-port',
    String(innerUiPort),
    '--namespace',
    o.namespace ?? 'default',
    '--log-level',
    'error',
    ...sqlitePragmaArgs(),
    ...agentDynamicConfigArgs(),
    ...SEARCH_ATTRIBUTES.flatMap((a) => ['--search-attribute', `${a.name}=${a.type}`]),
    // a path on the UI's origin, never a URL with a secret: the arguments are readable by every local user
    ...(o.codec ? ['--ui-codec-endpoint', UI_CODEC_PATH] : o.codecEndpoint ? ['--ui-codec-endpoint', o.codecEndpoint] : []),
  ];
  // execa's cleanup covers an exit; a SIGKILLed `kiln dev` or `kiln run` left its server running
  // for good (six strays after one test pass): the kernel stops it with its parent instead
  const isolated = isolatedCommand(sockDir, { grpc: o.port, ui: innerUiPort }, [o.binary, ...args]);
  let grpcBridge: HostBridge | undefined;
  if ('argv' in isolated) grpcBridge = await startHostBridge(ip, o.port, join(sockDir, 'grpc.sock'));
  const [file = o.binary, ...argv] = [...dieWithParent('SIGTERM'), ...('argv' in isolated ? isolated.argv : [o.binary, ...args])];
  const child = execa(file, argv, { reject: false, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', cleanup: true, env: serverEnv(), extendEnv: false });
  let stderr = '';
  // a panic's headline comes first, then every goroutine's stack: keep both ends
  let stderrHead = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderrHead.length < 4000) stderrHead = (stderrHead + d.toString()).slice(0, 4000);
    stderr = (stderr + d.toString()).slice(-4000);
  });
  // a start that goes no further leaves nothing: the server, the bridge, the sockets' directory
  const giveUp = async () => {
    child.kill('SIGKILL');
    await grpcBridge?.close();
    await rm(sockDir, { recursive: true, force: true });
  };
  const address = `${ip}:${o.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      await giveUp();
      throw new CrashedBeforeReadyError(`temporal dev server exited (${child.exitCode}) before it was ready: ${whyItDied(stderrHead, stderr)}`);
    }
    try {
      const c = await Connection.connect({ address, connectTimeout: 1000 });
      await c.workflowService.getSystemInfo({});
      await c.close();
      break;
    } catch {
      if (Date.now() > deadline) {
        await giveUp();
        throw new Error(`temporal dev server did not become ready at ${address} within 60 s: ${stderr.trim().slice(-500)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  let guard;
  try {
    guard = await startUiGuard({
      port: o.uiPort,
      upstreamPort: innerUiPort,
      ...(grpcBridge ? { upstreamSocket: join(sockDir, 'ui.sock') } : {}),
      ...(o.codec ? { codec: o.codec } : {}),
    });
  } catch (err) {
    await giveUp();
    throw new Error(`the Web UI port ${o.uiPort} is not free on 127.0.0.1: ${(err as Error).message}`, { cause: err });
  }
  return {
    address,
    uiUrl: guard.url,
    process: child,
    ...(guard.codecLogin ? { codecLogin: guard.codecLogin } : {}),
    ...('problem' in isolated
      ? {
          exposure: `the Web UI's own port ${innerUiPort} is on the host's loopback, unguarded (${isolated.problem}): any local process or page that finds it gets past the guard`,
        }
      : {}),
    async stop() {
      await guard.close();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await child;
        clearTimeout(timer);
      }
      await grpcBridge?.close();
      await rm(sockDir, { recursive: true, force: true });
    },
  };
}

/**
 * The dev server's environment: what a process needs to run, nothing of Kiln's (codec keys, the
 * model's API key, tokens): it needs none of them, and a process's environment outlives the
 * moment it was read for.
 */
function serverEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && /^(PATH|HOME|USER|LOGNAME|TMPDIR|TZ|LANG|LC_\w+)$/.test(k)) out[k] = v;
  return out;
}

/** Ports this process was handed lately: free until their user binds them, the OS may hand one out again. */
const handedOut = new Map<number, number>();
const HANDED_OUT_MS = 5 * 60_000;

/**
 * A port nothing listens on right now, on loopback (the OS picks it), and none of `besides` nor
 * one this process was handed in the last minutes: the OS hands a port back out soon after it was
 * free, and two servers of one test must not both get it.
 */
export async function freePort(besides: number[] = []): Promise<number> {
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > HANDED_OUT_MS) handedOut.delete(port);
  for (;;) {
    const port = await anyFreePort();
    if (besides.includes(port) || handedOut.has(port)) continue;
    handedOut.set(port, now);
    return port;
  }
}

function anyFreePort(): Promise<number> {
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
