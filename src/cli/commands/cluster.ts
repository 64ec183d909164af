/** `kiln cluster`: the production Temporal server on a private PostgreSQL (actions/cluster.ts). */
import type { Command } from 'commander';
import { UsageError } from '../../shared/errors.js';

export function addClusterCommand(program: Command, out: (s: string) => void): void {
  program
    .command('cluster')
    .summary('Start a PostgreSQL-backed Temporal cluster here')
    .description(
      'Start the production Temporal server on a private PostgreSQL (built and set up on first use; data kept in --dir) for workers on this host or, with --bind, on several',
    )
    .option('--dir <dir>', 'where PostgreSQL data, config and logs live (default: $KILN_HOME/cluster; /var/lib/kiln/cluster as root)')
    .option('--port <n>', 'Temporal frontend port', '7233')
    .option('--shards <n>', 'history shards (fixed at the first start)', '4')
    .option(
      '--bind <ip>',
      'the address the server listens on: 127.0.0.1 is this machine only; other hosts need an address of this machine or 0.0.0.0 (no authentication: docs/team-setup.md)',
      '127.0.0.1',
    )
    .action(async (o: { dir?: string; port: string; shards: string; bind: string }) => {
      const port = Number(o.port);
      const shards = Number(o.shards);
      if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number`);
      if (!Number.isInteger(shards) || shards <= 0) throw new UsageError(`--shards ${o.shards}: expected a positive whole number`);
      const { runCluster } = await import('../actions/cluster.js');
      const { checkBindAddress } = await import('../../temporal/cluster.js');
      await runCluster({ dir: o.dir, port, shards, bind: checkBindAddress(o.bind) }, out);
    });
}
