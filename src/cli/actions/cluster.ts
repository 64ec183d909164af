/**
 * `kiln cluster`: a real Temporal cluster on this machine — PostgreSQL, both schemas, the
 * production server with Kiln's config, the namespace and search attributes — in one directory
 * that a second start reuses. Workers on this or other machines join with TEMPORAL_ADDRESS.
 */
import { join } from 'node:path';
import { kilnHome } from '../../embedded.js';
import { hostPort } from '../../temporal/cluster-config.js';
import { isLoopback, machineAddresses, startCluster } from '../../temporal/cluster.js';
import { settingsFrom } from '../../settings.js';

/** As root, PostgreSQL runs as another user, who cannot enter /root: the default moves to /var/lib. */
export function defaultClusterDir(env: NodeJS.ProcessEnv = process.env): string {
  return process.getuid?.() === 0 && !settingsFrom(env).home ? '/var/lib/kiln/cluster' : join(kilnHome(env), 'cluster');
}

/**
 * Where workers reach the server, said as it is: loopback is this machine only; a wildcard is
 * every address of this machine; a given address is itself.
 */
export function workerAddresses(bind: string, port: number, own: readonly string[] = machineAddresses()): { where: string; addresses: string[] } {
  if (isLoopback(bind)) return { where: 'this machine only', addresses: [hostPort(bind, port)] };
  if (bind === '0.0.0.0' || bind === '::') {
    const others = own.filter((a) => !isLoopback(a) && !a.startsWith('fe80:') && (bind === '::' || !a.includes(':')));
    return { where: 'any host', addresses: others.map((a) => hostPort(a, port)) };
  }
  return { where: 'any host', addresses: [hostPort(bind, port)] };
}

/** Said loudly: the server's gRPC API has no authentication of its own. */
export function exposureWarning(bind: string, port: number): string | undefined {
  if (isLoopback(bind)) return undefined;
  return `WARNING: the Temporal frontend listens on ${hostPort(bind, port)} with NO authentication: anyone who reaches this port can start, read, approve and cancel runs, and read their history. Keep it on a private network or behind a firewall, or configure mTLS / JWT authorization on the server (docs/team-setup.md).`;
}

export async function runCluster(o: { dir?: string; port: number; shards: number; bind?: string }, out: (s: string) => void): Promise<void> {
  const dir = o.dir ?? defaultClusterDir();
  const c = await startCluster({ dir, port: o.port, shards: o.shards, bind: o.bind, log: out });
  const port = Number(c.address.slice(c.address.lastIndexOf(':') + 1));
  const w = workerAddresses(c.bind, port);
  out(`Temporal cluster:   listening on ${hostPort(c.bind, port)} (PostgreSQL on 127.0.0.1:${c.pg.port}, data in ${dir})`);
  out(`server metrics:     ${c.metricsUrl}`);
  out(`workers (${w.where}): export TEMPORAL_ADDRESS=${w.addresses.length === 1 ? w.addresses[0] : `<one of ${w.addresses.join(', ')}>`}; kiln worker`);
  if (isLoopback(c.bind)) out('                    other hosts cannot reach it: start with --bind <an address of this machine> (or 0.0.0.0)');
  const warning = exposureWarning(c.bind, port);
  if (warning) out(warning);
  out(`fleet:              kiln list --phase awaiting_approval   (docs/cluster.md)`);
  out('Ctrl-C stops the server and PostgreSQL; the data stays for the next `kiln cluster`.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  out('stopping…');
  await c.stop();
}
