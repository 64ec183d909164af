/** `kiln approve` and `kiln reject`: answer a tool call that waits for a person's approval. */
import { Option, type Command } from 'commander';
import { approverFor } from '../../client/signed-approver.js';
import { UsageError } from '../../shared/errors.js';
import { connectClient, runsModule, withRun, type RunHandle } from '../with-run.js';

export function addApproveCommands(program: Command, out: (s: string) => void): void {
  program
    .command('approve')
    .summary('Approve a pending tool call')
    .description('Approve a pending tool call (the only pending one if no id is given)')
    .argument('[run]', 'the run (default: the only run waiting for an approval)')
    .argument('[approval]', "the approval id (default: the run's only pending approval)")
    .option('--by <name>', 'who approves (default: your OS user; audit.jsonl records it as self-declared unless it is that user)')
    .option('--note <text>', 'a note for the audit log')
    .option('--for-run', 'approve this kind of call for the rest of the run')
    .option('--pre <command>', 'approve ahead of time: the first request for exactly this command (never a call the policy denies)')
    .addOption(new Option('--scope <scope>', 'once, or run: with --pre, every request for that command; else like --for-run').choices(['once', 'run']))
    .action(
      async (
        runArg: string | undefined,
        approvalId: string | undefined,
        o: { by?: string; note?: string; forRun?: boolean; pre?: string; scope?: 'once' | 'run' },
      ) => {
        const scope = o.scope ?? (o.forRun ? 'run' : 'once');
        const { sendApproval, sendPreApproval } = await runsModule();
        if (o.pre !== undefined) {
          if (!runArg || approvalId)
            throw new UsageError('--pre approves a command ahead of time: name the run and no approval (kiln approve RUN --pre "npm run lint")');
          return withRun(runArg, async (handle, client) => {
            const by = await approverFor(handle, o.by, { kind: 'pre-approval', command: o.pre!, scope });
            out(await sendPreApproval(client, handle, { text: o.pre!, scope, by }));
          });
        }
        const runId = runArg ?? (await onlyWaitingRun());
        await withRun(runId, async (handle, client) => {
          const id = approvalId ?? (await onlyPending(handle));
          const by = await approverFor(handle, o.by, { kind: 'approval', id });
          out(await sendApproval(client, handle, { approvalId: id, approve: true, scope, by, note: o.note }));
        });
      },
    );

  program
    .command('reject')
    .summary('Reject a pending tool call, with a reason')
    .description('Reject a pending tool call; the reason goes back to the model')
    .argument('<run>')
    .argument('<approval>')
    .requiredOption('--reason <text>', 'why (the model reads it)')
    .option('--by <name>', 'who rejects (default: your OS user)')
    .action(async (runId: string, approvalId: string, o: { reason: string; by?: string }) => {
      const { sendApproval } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const by = await approverFor(handle, o.by, { kind: 'approval', id: approvalId });
        out(await sendApproval(client, handle, { approvalId, approve: false, reason: o.reason, by }));
      });
    });
}

/** `kiln approve` with no run: the one run that waits for an approval, if there is exactly one. */
async function onlyWaitingRun(): Promise<string> {
  const { waitingRuns } = await runsModule();
  const { client, connection } = await connectClient();
  try {
    const runs = await waitingRuns(client);
    if (runs.length === 1) return runs[0]!;
    if (runs.length === 0) throw new UsageError('no run waits for an approval (see `kiln list`)');
    throw new UsageError(`${runs.length} runs wait for an approval (${runs.slice(0, 5).join(', ')}${runs.length > 5 ? ', …' : ''}): name one`);
  } finally {
    await connection.close();
  }
}

async function onlyPending(handle: RunHandle): Promise<string> {
  const { readState } = await runsModule();
  const st = await readState(handle);
  if (!st) throw new UsageError('no worker answers right now, so the pending approval is unknown: name it (kiln approve RUN APPROVAL)');
  const ids = st.pendingApprovals.map((a) => a.id);
  if (ids.length === 1) return ids[0]!;
  if (ids.length === 0) throw new UsageError(`${st.runId} has no pending approval (phase: ${st.phase})`);
  throw new UsageError(`${st.runId} has ${ids.length} pending approvals (${ids.join(', ')}): name one`);
}
