import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentDynamicConfig, hostPort, localAddress, writeClusterConfig, type ClusterPorts } from '../../../src/temporal/cluster-config.js';
import { checkBindAddress } from '../../../src/temporal/cluster.js';
import { exposureWarning, workerAddresses } from '../../../src/cli/actions/cluster.js';
import { UsageError } from '../../../src/shared/errors.js';
import { SEARCH_ATTRIBUTES } from '../../../src/shared/search-attributes.js';
import { AGENT_DYNAMIC_CONFIG, agentDynamicConfigArgs } from '../../../src/temporal/dev-server.js';

const ports: ClusterPorts = {
  frontend: 17233,
  frontendHttp: 17243,
  frontendMembership: 16933,
  history: 17234,
  historyMembership: 16934,
  matching: 17235,
  matchingMembership: 16935,
  worker: 17239,
  workerMembership: 16939,
  metrics: 18000,
};
const pg = { host: '127.0.0.1', port: 15432, user: 'temporal', password: 'temporal' };

// JSON is YAML: the server's loader (yaml.v3) reads these files as written; a comment line first is fine
const load = (f: string) => JSON.parse(readFileSync(f, 'utf8').replace(/^#.*\n/, ''));

describe('the generated cluster config', () => {
  it('points both stores at PostgreSQL, binds every service to the given ports, and fixes the shard count', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cfg-'));
    const { configDir, dynamicFile } = writeClusterConfig(dir, { ports, pg, numHistoryShards: 8 });
    const cfg = load(join(configDir, 'development.yaml'));
    expect(cfg.persistence.numHistoryShards).toBe(8);
    expect(cfg.persistence.datastores['postgres-default'].sql).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal',
      connectAddr: '127.0.0.1:15432',
    });
    expect(cfg.persistence.datastores['postgres-visibility'].sql.databaseName).toBe('temporal_visibility');
    expect(cfg.services.frontend.rpc).toMatchObject({ grpcPort: 17233, httpPort: 17243, membershipPort: 16933 });
    expect(cfg.services.history.rpc.grpcPort).toBe(17234);
    expect(cfg.global.metrics.prometheus.listenAddress).toBe('127.0.0.1:18000');
    expect(cfg.dynamicConfigClient.filepath).toBe(dynamicFile);
  });

  it("raises the history queue readers' poll limits for agent workloads (the same values kiln dev uses)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cfg-'));
    const { dynamicFile } = writeClusterConfig(dir, { ports, pg, numHistoryShards: 4 });
    const dyn = load(dynamicFile);
    for (const [k, v] of Object.entries(AGENT_DYNAMIC_CONFIG)) expect(dyn[k]).toEqual([{ value: v, constraints: {} }]);
    expect(dyn['history.transferProcessorMaxPollRPS'][0].value).toBeGreaterThan(20);
  });

  it('turns Worker Versioning on, as kiln dev does (a run finishes on the build that started it)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cfg-'));
    const { dynamicFile } = writeClusterConfig(dir, { ports, pg, numHistoryShards: 4 });
    const dyn = load(dynamicFile);
    expect(dyn['system.enableDeploymentVersions']).toEqual([{ value: true, constraints: {} }]);
    expect(dyn['frontend.workerVersioningWorkflowAPIs']).toEqual([{ value: true, constraints: {} }]);
    expect(agentDynamicConfigArgs()).toEqual(expect.arrayContaining(['system.enableDeploymentVersions=true', 'frontend.workerVersioningWorkflowAPIs=true']));
  });

  it('dynamic: {} leaves the server defaults (the baseline the docs measure against)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cfg-'));
    const { dynamicFile } = writeClusterConfig(dir, { ports, pg, numHistoryShards: 4, dynamic: {} });
    expect(load(dynamicFile)).toEqual({});
  });
});

describe('where the cluster listens (kiln cluster --bind)', () => {
  const cfgFor = (ip?: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-cfg-'));
    const { configDir } = writeClusterConfig(dir, { ports, pg, numHistoryShards: 4, ...(ip ? { ip } : {}) });
    return load(join(configDir, 'development.yaml'));
  };
  const services = ['frontend', 'history', 'matching', 'worker'] as const;

  it('by default every service, and the metrics endpoint, is on loopback only', () => {
    const cfg = cfgFor();
    for (const s of services) expect(cfg.services[s].rpc.bindOnIP).toBe('127.0.0.1');
    expect(cfg.global.membership.broadcastAddress).toBe('127.0.0.1');
    expect(cfg.global.metrics.prometheus.listenAddress).toBe('127.0.0.1:18000');
  });

  it('0.0.0.0: every service listens on all interfaces and the services reach each other on loopback', () => {
    const cfg = cfgFor('0.0.0.0');
    for (const s of services) expect(cfg.services[s].rpc.bindOnIP).toBe('0.0.0.0');
    expect(cfg.global.membership.broadcastAddress).toBe('127.0.0.1');
    expect(cfg.global.metrics.prometheus.listenAddress).toBe('0.0.0.0:18000');
    expect(cfg.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:17233');
  });

  it('a given address: the services announce and reach each other there (loopback would not answer)', () => {
    const cfg = cfgFor('10.1.2.3');
    for (const s of services) expect(cfg.services[s].rpc.bindOnIP).toBe('10.1.2.3');
    expect(cfg.global.membership.broadcastAddress).toBe('10.1.2.3');
    expect(cfg.clusterMetadata.clusterInformation.active.rpcAddress).toBe('10.1.2.3:17233');
  });

  it('IPv6: addresses with a port are bracketed', () => {
    expect(hostPort('::1', 7233)).toBe('[::1]:7233');
    expect(localAddress('::')).toBe('::1');
    expect(cfgFor('::').global.metrics.prometheus.listenAddress).toBe('[::]:18000');
  });

  it('--bind takes a wildcard or an address of this machine, and says which ones it has', () => {
    const own = ['127.0.0.1', '10.1.2.3', '::1'];
    expect(checkBindAddress('0.0.0.0', own)).toBe('0.0.0.0');
    expect(checkBindAddress(' 10.1.2.3 ', own)).toBe('10.1.2.3');
    expect(() => checkBindAddress('my-host', own)).toThrow(/--bind "my-host": expected an IP address.*10\.1\.2\.3/);
    expect(() => checkBindAddress('10.9.9.9', own)).toThrow(UsageError);
    expect(() => checkBindAddress('10.9.9.9', own)).toThrow(/not an address of this machine; its addresses are 127\.0\.0\.1, 10\.1\.2\.3, ::1/);
  });

  it('the start-up lines give workers the real address, and warn loudly beyond loopback', () => {
    const own = ['127.0.0.1', '10.1.2.3', '192.168.5.6', '::1', 'fe80::1'];
    expect(workerAddresses('127.0.0.1', 7233, own)).toEqual({ where: 'this machine only', addresses: ['127.0.0.1:7233'] });
    expect(workerAddresses('0.0.0.0', 7233, own)).toEqual({ where: 'any host', addresses: ['10.1.2.3:7233', '192.168.5.6:7233'] });
    expect(workerAddresses('10.1.2.3', 7233, own)).toEqual({ where: 'any host', addresses: ['10.1.2.3:7233'] });
    expect(exposureWarning('127.0.0.1', 7233)).toBeUndefined();
    for (const ip of ['0.0.0.0', '10.1.2.3']) expect(exposureWarning(ip, 7233)).toMatch(/^WARNING: .*NO authentication.*docs\/team-setup\.md/);
  });
});

describe('docker-compose.yml', () => {
  it('mounts the same agent dynamic config as kiln dev and kiln cluster use', () => {
    const root = join(import.meta.dirname, '..', '..', '..');
    const compose = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    expect(compose).toContain('./deploy/dynamicconfig.yaml:/etc/temporal/config/dynamicconfig/kiln.yaml');
    const file = readFileSync(join(root, 'deploy', 'dynamicconfig.yaml'), 'utf8');
    // key:\n  - value: N (or true/false)
    const values = Object.fromEntries([...file.matchAll(/^([\w.]+):\n\s+- value: (\d+|true|false)/gm)].map((m) => [m[1], JSON.parse(m[2]!) as unknown]));
    expect(values).toEqual(agentDynamicConfig());
  });

  it("registers every one of Kiln's search attributes, with its type", () => {
    const compose = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docker-compose.yml'), 'utf8');
    const created = [...compose.matchAll(/search-attribute create --namespace default --name (\w+) --type (\w+)/g)].map((m) => ({ name: m[1], type: m[2] }));
    expect(created).toEqual(SEARCH_ATTRIBUTES);
  });
});
