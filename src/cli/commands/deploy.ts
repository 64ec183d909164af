/** `kiln deploy status|set-current`: which worker build takes new runs (actions/deploy.ts). */
import type { Command } from 'commander';

export function addDeployCommand(program: Command, out: (s: string) => void): void {
  const deploy = program
    .command('deploy')
    .summary('Which worker build takes new runs')
    .description('Worker Versioning: a run finishes on the build that started it; the current build takes new runs (see docs/cluster.md, "Upgrading workers")');
  deploy
    .command('status')
    .description('List the builds of the deployment: which is current, which still have open runs (draining)')
    .option('--deployment <name>', 'the Worker Deployment (default: KILN_DEPLOYMENT, else the task queue)')
    .action(async (o: { deployment?: string }) => {
      const { deployStatus } = await import('../actions/deploy.js');
      await deployStatus(o, out);
    });
  deploy
    .command('set-current')
    .description('Send new runs to this build; runs in flight stay on theirs (its workers must be polling)')
    .requiredOption('--build-id <id>', 'the build, as `kiln worker` printed it')
    .option('--deployment <name>', 'the Worker Deployment (default: KILN_DEPLOYMENT, else the task queue)')
    .action(async (o: { buildId: string; deployment?: string }) => {
      const { deploySetCurrent } = await import('../actions/deploy.js');
      await deploySetCurrent(o, out);
    });
}
