/** `kiln status RUN`: a run's phase, plan, files, approvals and budget, or its result once it ended. */
import type { Command } from 'commander';
import { runsModule, withRun } from '../with-run.js';

export function addStatusCommand(program: Command, out: (s: string) => void): void {
  program
    .command('status')
    .summary("Show a run's phase, plan, files, approvals, budget")
    .description("Show a run's phase, attempt, plan, touched files, pending approvals and budget")
    .argument('<run>')
    .option('--json', 'print the state as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      const { readState, outcome, formatSummary, webUiUrl } = await runsModule();
      const { diskWait, diskWaitLine } = await import('../../client/disk-wait.js');
      await withRun(runId, async (handle, client) => {
        // a query to a run whose build has no worker waits out its timeout and learns nothing
        // a server that will not describe its task queues to this client still answers the query
        const build = await (await import('../../client/stranded.js')).waitingForBuild(client, handle).catch(() => undefined);
        if (build) {
          if (o.json) return out(JSON.stringify({ runId, status: 'RUNNING', state: null, waitingForBuild: build }));
          return out(
            `${runId}: RUNNING — waiting for a worker of build ${build}: the run started on that build and stays on it (Worker Versioning); \`kiln dev\` offers to finish or cancel such runs, \`kiln deploy status\` lists the builds`,
          );
        }
        const st = await readState(handle);
        if (!st) {
          const d = await handle.describe();
          // a finished run still has its result in history, worker or not
          const r = d.status.name === 'RUNNING' ? undefined : await outcome(handle).catch(() => undefined);
          if (o.json) return out(JSON.stringify({ runId, status: d.status.name, state: null, result: r ?? null }));
          if (r) return out(`${formatSummary(r)}\n  (no worker answers queries right now: this is the run's result)`);
          return out(`${runId}: ${d.status.name} (no worker answers queries right now; start one with \`kiln worker\` or \`kiln dev\`)`);
        }
        const disk = await diskWait(handle).catch(() => undefined);
        if (o.json) return out(JSON.stringify(disk ? { ...st, diskWait: disk } : st));
        const { formatStatus } = await import('../actions/status.js');
        // a run of parallel attempts: each child as it stands now, with what it waits for
        const children = await Promise.all((st.children ?? []).map(async (c) => (await readState(handle.client.getHandle(c.runId))) ?? c));
        out(formatStatus(st, webUiUrl(), { disk: disk && diskWaitLine(disk), children }));
      });
    });
}
