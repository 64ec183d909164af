/** `kiln logs RUN`: a run's event log, from its artifacts or, while it runs elsewhere, from the run. */
import type { Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../../shared/errors.js';
import { runsModule, withRun } from '../with-run.js';

export function addLogsCommand(program: Command, out: (s: string) => void): void {
  program
    .command('logs')
    .summary("Print a run's event log")
    .description("Print a run's event log (events.jsonl), or the live log if the worker is elsewhere")
    .argument('<run>')
    .option('--repo <dir>', 'the repo, to read the artifacts directly')
    .option('--json', 'print events.jsonl as it is (every event, one JSON object a line)')
    .action(async (runId: string, o: { repo?: string; json?: boolean }) => {
      // the artifacts are on disk: no server needed
      const { artifactsDir } = await import('../../shared/paths.js');
      const local = o.repo ? await readFile(join(artifactsDir(o.repo, runId), 'events.jsonl'), 'utf8').catch(() => undefined) : undefined;
      const { formatEvents, formatLine, readState, startInput } = await runsModule();
      if (local) return o.json ? out(local.trimEnd()) : formatEvents(local).forEach((l) => out(l));
      await withRun(runId, async (handle) => {
        const st = await readState(handle);
        const repo = o.repo ?? st?.repo ?? (await startInput(handle))?.repo;
        const text = repo ? await readFile(join(artifactsDir(repo, runId), 'events.jsonl'), 'utf8').catch(() => undefined) : undefined;
        if (text && o.json) return out(text.trimEnd());
        if (text) return formatEvents(text).forEach((l) => out(l));
        if (st) return st.log.forEach((l) => out(o.json ? JSON.stringify(l) : formatLine(l)));
        throw new UsageError(`no log found for ${runId}: pass --repo DIR`);
      });
    });
}
