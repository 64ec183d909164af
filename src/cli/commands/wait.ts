/** `kiln wait RUN`: wait for a run to end and print its outcome. */
import type { Command } from 'commander';
import { colourOn, paintSummary } from '../colour.js';
import { runsModule, withRun } from '../with-run.js';

export function addWaitCommand(program: Command, out: (s: string) => void): void {
  program
    .command('wait')
    .summary('Wait for a run to end; print its outcome')
    .description('Wait for a run to end and print its outcome (exits 0 only when it succeeded)')
    .argument('<run>')
    .option('--json', 'print the outcome as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      const { outcome, Contact, jsonSummary, formatSummary } = await runsModule();
      await withRun(runId, async (handle) => {
        const r = await outcome(handle, undefined, new Contact(runId, (l) => process.stderr.write(`${l}\n`)));
        out(o.json ? jsonSummary(r) : paintSummary(formatSummary(r), colourOn()));
        if (r.state !== 'succeeded') process.exitCode = 1;
      });
    });
}
