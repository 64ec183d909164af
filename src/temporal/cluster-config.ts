/**
 * The Temporal server's configuration for a Kiln cluster, generated from the server module's
 * `config/development-postgres12.yaml`: PostgreSQL for history and visibility, all four services
 * in one process on the ports given, and dynamic config tuned for agent workloads.
 * Both files are written as JSON, which YAML reads as it is (the server loads them with yaml.v3).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { AGENT_DYNAMIC_CONFIG, VERSIONING_DYNAMIC_CONFIG } from './dev-server.js';

export interface ClusterPorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
  /** the server's own Prometheus endpoint */
  metrics: number;
}

export interface ClusterConfigOptions {
  ports: ClusterPorts;
  pg: { host: string; port: number; user: string; password: string };
  /**
   * Fixed when the cluster is first started; cannot change afterwards. Each shard has its own
   * queue readers (and their poll-rate limits), so shards are how history work spreads.
   */
  numHistoryShards: number;
  /** the dynamic config values (default: the agent-workload ones); `{}` gives the server's defaults */
  dynamic?: Record<string, unknown>;
  /** the address every service listens on (default 127.0.0.1: this machine only; 0.0.0.0: all interfaces) */
  ip?: string;
}

/**
 * The address the server's own services use to reach each other when they listen on `ip`: a
 * wildcard listens on loopback too, a specific address only on itself (127.0.0.1 would not answer).
 */
export function localAddress(ip: string): string {
  return ip === '0.0.0.0' ? '127.0.0.1' : ip === '::' ? '::1' : ip;
}

/** host:port, with an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** 4 shards on one machine (the module's development default): enough parallel queue readers for tens of concurrent runs. */
export const DEFAULT_SHARDS = 4;

/** Dynamic config for agent workloads on a cluster (the dev server gets the same via flags). */
export function agentDynamicConfig(): Record<string, unknown> {
  return {
    ...AGENT_DYNAMIC_CONFIG,
    ...VERSIONING_DYNAMIC_CONFIG,
    // as the module's development-sql.yaml: SQL visibility stores ids in VARCHAR(255) columns,
    // so a longer id must be refused at the start, not fail later (Kiln's run ids are ≤ 101)
    'limit.maxIDLength': 255,
  };
}

function datastore(o: ClusterConfigOptions, databaseName: string, maxConns: number) {
  return {
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${o.pg.host}:${o.pg.port}`,
      connectProtocol: 'tcp',
      user: o.pg.user,
      password: o.pg.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  };
}

export function serverConfig(o: ClusterConfigOptions, dynamicConfigFile: string): object {
  const ip = o.ip ?? '127.0.0.1';
  const rpc = (grpcPort: number, membershipPort: number, extra: object = {}) => ({ rpc: { grpcPort, membershipPort, bindOnIP: ip, ...extra } });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: o.numHistoryShards,
      datastores: {
        'postgres-default': datastore(o, 'temporal', 20),
        // the module's default of 2 connections makes list queries queue behind visibility writes
        'postgres-visibility': datastore(o, 'temporal_visibility', 10),
      },
    },
    global: {
      // all four services are in this one process, so the address they announce to each other is a local one
      membership: { maxJoinDuration: '30s', broadcastAddress: localAddress(ip) },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: hostPort(ip, o.ports.metrics) } },
    },
    services: {
      frontend: rpc(o.ports.frontend, o.ports.frontendMembership, { httpPort: o.ports.frontendHttp }),
      history: rpc(o.ports.history, o.ports.historyMembership),
      matching: rpc(o.ports.matching, o.ports.matchingMembership),
      worker: rpc(o.ports.worker, o.ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: hostPort(localAddress(ip), o.ports.frontend) },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/** Dynamic config file format: each key a list of {value, constraints}. */
export function dynamicConfigFile(values: Record<string, unknown>): object {
  return Object.fromEntries(Object.entries(values).map(([k, value]) => [k, [{ value, constraints: {} }]]));
}

/**
 * Writes `DIR/config/development.yaml` and `DIR/config/dynamic.yaml`; the server then starts with
 * `server --root DIR --config config --env development start`.
 */
export function writeClusterConfig(dir: string, o: ClusterConfigOptions): { configDir: string; dynamicFile: string } {
  const configDir = join(dir, 'config');
  mkdirSync(configDir, { recursive: true });
  const dynamicFile = join(configDir, 'dynamic.yaml');
  const header = '# generated by Kiln (src/temporal/cluster-config.ts); JSON is YAML\n';
  writeFileSync(join(configDir, 'development.yaml'), header + JSON.stringify(serverConfig(o, dynamicFile), null, 2) + '\n');
  writeFileSync(dynamicFile, header + JSON.stringify(dynamicConfigFile(o.dynamic ?? agentDynamicConfig()), null, 2) + '\n');
  return { configDir, dynamicFile };
}
