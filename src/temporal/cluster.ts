/**
 * A real Temporal cluster on one machine: PostgreSQL in a directory of its own, both schemas set
 * up with the server's sql tool, the production server (all four services in one process) with a
 * generated config, the default namespace and Kiln's search attributes. The tests' cluster tier
 * and `kiln cluster` both start it; the same steps by hand are in docs/cluster.md.
 * Everything lives under one directory, so a second start reuses data, ports and schema.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { execa, type ResultPromise } from 'execa';
import { createWriteStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../shared/errors.js';
import { freePort, portTaken, PortInUseError } from './dev-server.js';
import { hostPort, localAddress, writeClusterConfig, DEFAULT_SHARDS, type ClusterPorts } from './cluster-config.js';
import { startPostgres, type Postgres } from './postgres.js';
import { registerSearchAttributes } from './register-search-attributes.js';
import { provisionServerBinaries, type ServerBinaries } from './server-binary.js';

export interface ClusterOptions {
  dir: string;
  /** the frontend port (default: a free one; `kiln cluster` uses 7233) */
  port?: number;
  shards?: number;
  /** dynamic config values instead of the agent-workload ones (`{}`: the server's defaults) */
  dynamic?: Record<string, unknown>;
  namespace?: string;
  /**
   * The address the server listens on (default 127.0.0.1: this machine only). Another host's
   * workers need an address of this machine or 0.0.0.0; the frontend then has no authentication
   * unless the server is configured for it (docs/team-setup.md). Checked by checkBindAddress.
   */
  bind?: string;
  log?: (s: string) => void;
}

/** This machine's own addresses (what a specific --bind may name). */
export function machineAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .map((i) => i?.address)
    .filter((a): a is string => !!a);
}

/** A wildcard or one of this machine's addresses: anything else fails deep inside the server. */
export function checkBindAddress(ip: string, own: readonly string[] = machineAddresses()): string {
  const a = ip.trim();
  if (!isIP(a))
    throw new UsageError(
      `--bind ${JSON.stringify(ip)}: expected an IP address, e.g. 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of this machine's: ${own.join(', ')}`,
    );
  if (a !== '0.0.0.0' && a !== '::' && !own.includes(a))
    throw new UsageError(`--bind ${a}: not an address of this machine; its addresses are ${own.join(', ')} (or 0.0.0.0 for all)`);
  return a;
}

/** Loopback only: nobody on another machine reaches it. */
export function isLoopback(ip: string): boolean {
  return ip === '::1' || ip.startsWith('127.');
}

/** What a cluster directory remembers between starts (the shard count can never change). */
interface ClusterState {
  pgPort: number;
  ports: ClusterPorts;
  shards: number;
  schema: boolean;
}

export interface LocalCluster {
  /** where this machine reaches the frontend */
  address: string;
  /** what the server listens on (ClusterOptions.bind) */
  bind: string;
  namespace: string;
  dir: string;
  /** the server's Prometheus endpoint */
  metricsUrl: string;
  pg: Postgres;
  stopServer(signal?: NodeJS.Signals): Promise<void>;
  startServer(): Promise<void>;
  stop(): Promise<void>;
}

const STATE_FILE = 'cluster.json';
const PG_USER = 'temporal';
const PG_PASSWORD = 'temporal';

/**
 * A free port below 32768: the server records its services' ports in cluster_membership as a
 * SMALLINT, so the OS's ephemeral ports (32768+) make it exit at start.
 */
async function lowPort(taken: Set<number>, ip: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (taken.has(port) || (await portTaken(ip, port))) continue;
    taken.add(port);
    return port;
  }
  throw new Error('no free port between 20000 and 32000 for the Temporal services');
}

async function newState(o: ClusterOptions, ip: string): Promise<ClusterState> {
  const taken = new Set<number>(o.port ? [o.port] : []);
  const p = () => lowPort(taken, ip);
  return {
    pgPort: await freePort(),
    ports: {
      frontend: o.port ?? (await p()),
      frontendHttp: await p(),
      frontendMembership: await p(),
      history: await p(),
      historyMembership: await p(),
      matching: await p(),
      matchingMembership: await p(),
      worker: await p(),
      workerMembership: await p(),
      metrics: await p(),
    },
    shards: o.shards ?? DEFAULT_SHARDS,
    schema: false,
  };
}

/** create-database, then the versioned schema of both databases (update-schema skips what is applied). */
async function setupSchemas(bins: ServerBinaries, pgPort: number, first: boolean, log: (s: string) => void): Promise<void> {
  const env = { ...process.env, SQL_PLUGIN: 'postgres12', SQL_HOST: '127.0.0.1', SQL_PORT: String(pgPort), SQL_USER: PG_USER, SQL_PASSWORD: PG_PASSWORD };
  const sql = async (db: string, args: string[]) => {
    const r = await execa(bins.sql, ['--db', db, ...args], { env, reject: false, all: true });
    if (r.exitCode !== 0) throw new Error(`temporal-sql-tool --db ${db} ${args.join(' ')} failed: ${String(r.all).trim().split('\n').slice(-3).join(' ')}`);
  };
  for (const [db, sub] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    if (first) {
      log(`schema: creating database ${db}`);
      await sql(db, ['create-database']);
      await sql(db, ['setup-schema', '-v', '0.0']);
    }
    await sql(db, ['update-schema', '-d', join(bins.schemaDir, sub, 'versioned')]);
  }
}

async function waitForFrontend(address: string, child: ResultPromise, output: () => string): Promise<Connection> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`temporal server exited (${child.exitCode}) before it was ready: ${output().trim().split('\n').slice(-3).join(' ')}`);
    try {
      const c = await Connection.connect({ address, connectTimeout: 1000 });
      await c.workflowService.getSystemInfo({});
      return c;
    } catch {
      if (Date.now() > deadline) throw new Error(`temporal server did not answer at ${address} within 120 s: ${output().trim().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** The namespace and Kiln's search attributes; retried while the new namespace propagates (~2 s). */
async function prepareNamespace(c: Connection, namespace: string, log: (s: string) => void): Promise<void> {
  const ALREADY_EXISTS = 6;
  try {
    await c.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') });
    log(`namespace ${namespace}: registered`);
  } catch (err) {
    if ((err as { code?: number }).code !== ALREADY_EXISTS) throw err;
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await registerSearchAttributes(c, namespace);
      if (r.added.length) log(`search attributes: added ${r.added.join(', ')}`);
      // a query on the attributes proves the visibility store sees them too
      await c.workflowService.countWorkflowExecutions({ namespace, query: `KilnPhase = 'x' AND KilnBudgetShare > 0` });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function startCluster(o: ClusterOptions): Promise<LocalCluster> {
  const log = o.log ?? (() => {});
  const namespace = o.namespace ?? 'default';
  const bind = checkBindAddress(o.bind ?? '127.0.0.1');
  await mkdir(o.dir, { recursive: true });
  const bins = await provisionServerBinaries({ log });
  const stateFile = join(o.dir, STATE_FILE);
  const state: ClusterState = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : await newState(o, bind);
  if (o.port && state.ports.frontend !== o.port) state.ports.frontend = o.port;
  if (o.shards && o.shards !== state.shards)
    log(`history shards: ${state.shards} (fixed when ${o.dir} was first started; --shards ${o.shards} needs a new directory)`);
  if (await portTaken(bind, state.ports.frontend)) {
    throw new PortInUseError(`port ${state.ports.frontend} on ${bind} is taken (another Temporal server, or \`kiln dev\`?): pick another with --port`);
  }
  const pg = await startPostgres({ dir: join(o.dir, 'postgres'), port: state.pgPort, user: PG_USER });
  let child: ResultPromise | undefined;
  try {
    await setupSchemas(bins, state.pgPort, !state.schema, log);
    state.schema = true;
    writeFileSync(stateFile, JSON.stringify(state, null, 2) + '\n');
    writeClusterConfig(o.dir, {
      ports: state.ports,
      pg: { host: '127.0.0.1', port: state.pgPort, user: PG_USER, password: PG_PASSWORD },
      numHistoryShards: state.shards,
      dynamic: o.dynamic,
      ip: bind,
    });
    const address = hostPort(localAddress(bind), state.ports.frontend);
    const logFile = join(o.dir, 'server.log');
    let tail = '';
    const startServer = async () => {
      const out = createWriteStream(logFile, { flags: 'a' });
      child = execa(bins.server, ['--root', o.dir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'], {
        reject: false,
        stdin: 'ignore',
        all: true,
        buffer: false,
        cleanup: true,
      });
      child.all?.on('data', (d: Buffer) => {
        out.write(d);
        tail = (tail + d.toString()).slice(-4000);
      });
      const c = await waitForFrontend(address, child, () => tail);
      try {
        await prepareNamespace(c, namespace, log);
      } finally {
        await c.close();
      }
    };
    const stopServer = async (signal: NodeJS.Signals = 'SIGTERM') => {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      c.kill(signal);
      const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
      await c;
      clearTimeout(timer);
    };
    await startServer();
    log(`temporal server: ${address} (${state.shards} history shards; log ${logFile})`);
    return {
      address,
      bind,
      namespace,
      dir: o.dir,
      metricsUrl: `http://${hostPort(localAddress(bind), state.ports.metrics)}/metrics`,
      pg,
      startServer,
      stopServer,
      async stop() {
        await stopServer();
        await pg.stop();
      },
    };
  } catch (err) {
    (child as ResultPromise | undefined)?.kill('SIGKILL');
    await pg.stop();
    throw err;
  }
}
