/** `kiln list`: runs, newest first, filtered by a visibility query over Kiln's search attributes. */
import type { Command } from 'commander';
import type { FleetFilters } from '../../client/fleet-query.js';
import { CliError, UsageError } from '../../shared/errors.js';
import { connectClient, runsModule } from '../with-run.js';

type ListFlags = FleetFilters & { limit: string; json?: boolean; showQuery?: boolean };

export function addListCommand(program: Command, out: (s: string) => void): void {
  program
    .command('list')
    .summary('List runs; filter by phase, repo, waiting, path…')
    .description(
      "List runs, newest first. Each filter is a Temporal visibility query over Kiln's search attributes (--show-query prints it for `temporal workflow list --query`)",
    )
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'one JSON object a line')
    .option('--phase <phase>', 'only runs in this phase (e.g. awaiting_approval, needs_human)')
    .option('--repo <dir>', 'only runs on this repository')
    .option('--waiting-longer-than <d>', 'only runs whose approval has waited longer than this (e.g. 30m, 2d)')
    .option('--over-budget <share>', 'only runs that used at least this share of a budget (0.8 or 80%)')
    .option('--touched <path>', 'only runs that changed this file (repo-relative)')
    .option('--approver <name>', 'only runs where this person decided an approval')
    .option('--show-query', 'print the visibility query instead of running it')
    .action((o: ListFlags) => listRuns(o, out));
}

async function listRuns(o: ListFlags, out: (s: string) => void): Promise<void> {
  const limit = Number(o.limit);
  if (!Number.isInteger(limit) || limit <= 0) throw new UsageError(`--limit ${o.limit}: expected a positive whole number`);
  const { fleetQuery, hasFilters, repoKey } = await import('../../client/fleet-query.js');
  // the filters alone: --limit and --json are not filters (with them, a plain `kiln list` was refused on a server without the attributes)
  const filters: FleetFilters = {
    phase: o.phase,
    repo: o.repo === undefined ? undefined : await repoKey(o.repo),
    waitingLongerThan: o.waitingLongerThan,
    overBudget: o.overBudget,
    touched: o.touched,
    approver: o.approver,
  };
  const query = fleetQuery(filters);
  if (o.showQuery) return out(query);
  const [{ hasKilnSearchAttributes }, { KilnApprovers, KilnBudgetShare, KilnPhase, KilnRepo, KilnTouched, KilnWaitingSince }] = await Promise.all([
    runsModule(),
    import('../../shared/search-attributes.js'),
  ]);
  const { client, connection } = await connectClient();
  try {
    if (hasFilters(filters) && !(await hasKilnSearchAttributes(client))) {
      throw new CliError(
        "this server does not have Kiln's search attributes, so runs cannot be filtered: start `kiln worker` once (it registers them) or see docs/cluster.md",
        2,
      );
    }
    let n = 0;
    for await (const w of client.workflow.list({ query })) {
      const a = w.typedSearchAttributes;
      if (o.json) {
        out(
          JSON.stringify({
            runId: w.workflowId,
            status: w.status.name,
            phase: a.get(KilnPhase) ?? null,
            started: w.startTime.toISOString(),
            repo: a.get(KilnRepo) ?? null,
            touched: a.get(KilnTouched) ?? [],
            approvers: a.get(KilnApprovers) ?? [],
            budgetShare: a.get(KilnBudgetShare) ?? null,
            waitingSince: a.get(KilnWaitingSince)?.toISOString() ?? null,
          }),
        );
        if (++n >= limit) break;
        continue;
      }
      if (n === 0) out(`${'RUN'.padEnd(36)} ${'STATUS'.padEnd(11)} ${'PHASE'.padEnd(17)} ${'STARTED'.padEnd(24)} REPO`);
      const phase = a.get(KilnPhase) ?? '-';
      const repo = a.get(KilnRepo) ?? '';
      out(`${w.workflowId.padEnd(36)} ${w.status.name.padEnd(11)} ${phase.padEnd(17)} ${w.startTime.toISOString().padEnd(24)} ${repo}`.trimEnd());
      if (++n >= limit) break;
    }
    if (n === 0 && !o.json) out(hasFilters(filters) ? 'no runs match' : 'no runs yet: start one with `kiln run --repo DIR --goal TEXT`');
  } finally {
    await connection.close();
  }
}
