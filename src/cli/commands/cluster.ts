/**
 * `kiln cluster`: a real Temporal cluster on this machine — PostgreSQL, both schemas, the
 * production server with Kiln's config, the namespace and search attributes — in one directory
 * that a second start reuses. Workers on this or other machines join with TEMPORAL_ADDRESS.
 */
import { join } from 'node:path';
import { kilnHome } from '../../client/embedded.js';
import { startCluster } from '../../temporal/cluster.js';

/** As root, PostgreSQL runs as another user, who cannot enter /root: the default moves to /var/lib. */
export function defaultClusterDir(env: NodeJS.ProcessEnv = process.env): string {
  return process.getuid?.() === 0 && !env.KILN_HOME ? '/var/lib/kiln/cluster' : join(kilnHome(env), 'cluster');
}

export async function runCluster(o: { dir?: string; port: number; shards: number }, out: (s: string) => void): Promise<void> {
  const dir = o.dir ?? defaultClusterDir();
  const c = await startCluster({ dir, port: o.port, shards: o.shards, log: out });
  out(`Temporal cluster:   ${c.address} (PostgreSQL on 127.0.0.1:${c.pg.port}, data in ${dir})`);
  out(`server metrics:     ${c.metricsUrl}`);
  out(`workers (any host): export TEMPORAL_ADDRESS=${c.address}; kiln worker`);
  out(`fleet:              kiln list --phase awaiting_approval   (docs/cluster.md)`);
  out('Ctrl-C stops the server and PostgreSQL; the data stays for the next `kiln cluster`.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  out('stopping…');
  await c.stop();
}
