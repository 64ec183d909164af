/** `kiln cancel RUN`: stop a run; its worktree is removed, its artifacts are still written. */
import type { Command } from 'commander';
import { approverFor } from '../../client/signed-approver.js';
import { CliError } from '../../shared/errors.js';
import { runsModule, withRun } from '../with-run.js';

export function addCancelCommand(program: Command, out: (s: string) => void): void {
  program
    .command('cancel')
    .summary('Cancel a run (worktree removed, artifacts kept)')
    .description('Cancel a run: it stops, its worktree is removed, its artifacts are still written')
    .argument('<run>')
    .option('--by <name>', "who cancels (default: your OS user; recorded in audit.jsonl and the run's reason)")
    .option('--reason <text>', 'why (recorded with it)')
    .action(async (runId: string, o: { by?: string; reason?: string }) => {
      const { requestCancel } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const d = await handle.describe();
        const ended = (status: string) => new CliError(`${runId} already ended (${status}): nothing to cancel`);
        if (d.status.name !== 'RUNNING') throw ended(d.status.name.toLowerCase());
        const by = await approverFor(handle, o.by, { kind: 'cancel' });
        if (!(await requestCancel(handle, { by, reason: o.reason, via: client.options.identity }))) throw ended('meanwhile');
        out(`cancelling ${runId}: it stops, writes its artifacts and removes its worktree (\`kiln wait ${runId}\` shows when it is done)`);
      });
    });
}
