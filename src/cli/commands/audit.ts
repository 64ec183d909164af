/** `kiln audit verify RUN`: check a run's audit.jsonl against the head the run recorded (actions/audit.ts). */
import type { Command } from 'commander';
import { UsageError } from '../../shared/errors.js';
import { runsModule, withRun } from '../with-run.js';

export function addAuditCommand(program: Command, out: (s: string) => void): void {
  program
    .command('audit')
    .summary("Check a run's audit log")
    .description(
      "audit verify RUN: recompute the hash chain of the run's audit.jsonl and check it ends at the head the run recorded (asked from Temporal); exits 1 naming what does not hold, 3 when the chain holds but no recorded head says where it ends (unverified)",
    )
    .command('verify')
    .argument('<run>')
    .option('--repo <dir>', 'the repo that holds the run (default: asked from Temporal)')
    .option(
      '--offline',
      'check the chain only, without Temporal: a cut or an edit of the last line is not seen, so it exits 3 (unverified) when the chain holds (needs --repo)',
    )
    .action(async (runId: string, o: { repo?: string; offline?: boolean }) => {
      const { auditFileExecution, auditVerify } = await import('../actions/audit.js');
      if (o.offline) {
        if (!o.repo) throw new UsageError('--offline reads the file only: pass --repo DIR');
        return out(await auditVerify(o.repo, runId));
      }
      const { readState, startInput } = await runsModule();
      const { recordedAuditHead } = await import('../../client/audit-head.js');
      await withRun(runId, async (handle, client) => {
        const repo = o.repo ?? (await readState(handle))?.repo ?? (await startInput(handle))?.repo;
        if (!repo) throw new UsageError(`cannot find the repo of ${runId}: pass --repo DIR`);
        out(await auditVerify(repo, runId, await recordedAuditHead(handle, client, await auditFileExecution(repo, runId))));
      }).catch(async (err: unknown) => {
        const { TemporalUnreachableError } = await import('../../temporal/connection.js');
        if (err instanceof TemporalUnreachableError && o.repo)
          throw new TemporalUnreachableError(`${err.message}; or pass --offline to check the chain only (the head the run recorded is in Temporal)`);
        throw err;
      });
    });
}
