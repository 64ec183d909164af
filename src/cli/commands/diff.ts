/** `kiln diff RUN`: a run's patch against its base. */
import type { Command } from 'commander';
import { UsageError } from '../../shared/errors.js';
import { runsModule, withRun } from '../with-run.js';

export function addDiffCommand(program: Command, out: (s: string) => void): void {
  program
    .command('diff')
    .summary("Print a run's patch")
    .description("Print a run's patch against its base")
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .action(async (runId: string, o: { repo?: string }) => {
      const { currentPatch, finishedPatch } = await import('../../client/patch.js');
      const left = o.repo ? await finishedPatch(o.repo, runId) : undefined;
      if (left !== undefined) return out(left);
      const { readState, startInput } = await runsModule();
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        const repo = o.repo ?? st?.repo ?? (await startInput(handle))?.repo;
        if (!repo) throw new UsageError(`cannot find the repo of ${runId}: pass --repo DIR`);
        out(await currentPatch(repo, runId, st?.worktree, st?.baseCommit));
      });
    });
}
