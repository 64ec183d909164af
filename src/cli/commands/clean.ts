/** `kiln clean --repo DIR`: remove the worktrees that finished runs kept (actions/clean.ts). */
import type { Command } from 'commander';
import { connectClient } from '../with-run.js';

export function addCleanCommand(program: Command, out: (s: string) => void): void {
  program
    .command('clean')
    .summary('Remove the worktrees of finished runs')
    .description(
      'Remove the worktrees that finished runs kept (blocked runs keep theirs for inspection) and the verification checkouts (.kiln/verify) a killed worker left; artifacts stay',
    )
    .requiredOption('--repo <dir>', 'the repository whose .kiln/worktrees to clean')
    .option('--older-than <d>', 'only worktrees untouched for this long (e.g. 7d)')
    .option('--unknown', 'also remove worktrees of runs the server does not know')
    .option('--dry-run', 'say what would be removed')
    .action(async (o: { repo: string; olderThan?: string; unknown?: boolean; dryRun?: boolean }) => {
      const { duration } = await import('../../client/run-options.js');
      const olderThanMs = o.olderThan === undefined ? undefined : duration(o.olderThan, '--older-than', 0);
      const { cleanWorktrees } = await import('../actions/clean.js');
      const { client, connection } = await connectClient();
      try {
        const r = await cleanWorktrees(client, { repo: o.repo, olderThanMs, unknown: o.unknown, dryRun: o.dryRun });
        for (const id of r.removed) out(`${o.dryRun ? 'would remove' : 'removed'} ${id}`);
        for (const c of r.removedCheckouts)
          out(`${o.dryRun ? 'would remove' : 'removed'} .kiln/verify/${c.name} (a checkout a killed verification of ${c.runId} left; that run has ended)`);
        for (const k of r.kept) out(`kept ${k.runId}: ${k.why}`);
        if (!r.removed.length && !r.removedCheckouts.length && !r.kept.length) out('no worktrees to clean');
      } finally {
        await connection.close();
      }
    });
}
