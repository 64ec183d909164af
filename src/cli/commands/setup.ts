/** `kiln setup [--cluster]`: provision the Temporal CLI and check bubblewrap (actions/setup.ts). */
import type { Command } from 'commander';

export function addSetupCommand(program: Command, out: (s: string) => void): void {
  program
    .command('setup')
    .summary('Build/cache the Temporal CLI, check bubblewrap')
    .description('Provision what Kiln needs on this machine: the Temporal CLI (built once, cached) and bubblewrap')
    .option('--cluster', 'also build the Temporal server and its schema tool for `kiln cluster` (needs PostgreSQL)')
    .action(async (o: { cluster?: boolean }) => {
      const { runSetup } = await import('../actions/setup.js');
      await runSetup(out);
      if (o.cluster) {
        const { provisionServerBinaries } = await import('../../temporal/server-binary.js');
        const { findPgBin } = await import('../../temporal/postgres.js');
        await provisionServerBinaries({ log: out });
        out(`postgresql: ${findPgBin()}`);
      }
    });
}
