/** `kiln budget show|set`: a tenant's budget ledger (the model calls' spend and limits over every run, fan-outs included). */
import type { Command } from 'commander';

export function addBudgetCommand(program: Command, out: (s: string) => void): void {
  const budget = program
    .command('budget')
    .summary("Show or set a tenant's budget ledger")
    .description(
      "A tenant's budget ledger: every model call reserves its worst case against the tenant, its repo, the day and its parallel run before it is sent (docs/fan-out.md)",
    );
  budget
    .command('show')
    .description('What each scope was billed, what calls in flight hold, and its limit')
    .option('--tenant <name>', 'the tenant (runs started without `kiln serve` count as "default")', 'default')
    .option('--json', 'the ledger as JSON')
    .action(async (o: { tenant: string; json?: boolean }) => (await import('../actions/budget.js')).showBudget(o, out));
  budget
    .command('set')
    .description('Set or remove one limit (exactly one of --tenant-wide, --day, --repo, --parent); runs parked on it retry once approved')
    .option('--tenant <name>', 'the tenant', 'default')
    .option('--tenant-wide', "the tenant's own limit over everything")
    .option('--day', "every UTC day's limit")
    .option('--repo <dir>', "a repository's limit")
    .option('--parent <run>', "a parallel run's limit over all its attempts")
    .option('--tokens <n>', 'at most this many tokens (input, output and cache together)')
    .option('--usd <n>', 'at most this many US dollars')
    .option('--remove', 'remove the limit')
    .option('--by <name>', 'who sets it (default: your OS user)')
    .action(async (o: SetFlags) => (await import('../actions/budget.js')).setBudget(o, out));
}

export interface SetFlags {
  tenant: string;
  tenantWide?: boolean;
  day?: boolean;
  repo?: string;
  parent?: string;
  tokens?: string;
  usd?: string;
  remove?: boolean;
  by?: string;
}
