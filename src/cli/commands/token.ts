/** `kiln token create|list|revoke`: the bearer tokens of `kiln serve` (actions/serve.ts). */
import { Option, type Command } from 'commander';

export function addTokenCommand(program: Command, out: (s: string) => void): void {
  const token = program
    .command('token')
    .summary('Create, list and revoke API tokens for `kiln serve`')
    .description('Bearer tokens for `kiln serve`, stored hashed under $KILN_HOME/server/tokens.json');
  token
    .command('create')
    .description('Create a token and print it once')
    .requiredOption('--tenant <name>', 'the tenant whose runs the token reaches')
    .requiredOption('--user <name>', 'the person every write with it is attributed to')
    .addOption(
      new Option('--role <role>', 'viewer reads; runner also starts and cancels; approver also approves')
        .choices(['viewer', 'runner', 'approver'])
        .default('viewer'),
    )
    .action(async (o: { tenant: string; user: string; role: string }) => {
      const { runTokenCreate } = await import('../actions/serve.js');
      runTokenCreate(o, out);
    });
  token
    .command('list')
    .description('List tokens (never their secrets)')
    .option('--json', 'as JSON')
    .action(async (o: { json?: boolean }) => {
      const { runTokenList } = await import('../actions/serve.js');
      runTokenList(o, out);
    });
  token
    .command('revoke')
    .description('Revoke a token by its id (see `kiln token list`)')
    .argument('<id>', 'the token id, tok-…')
    .action(async (id: string) => {
      const { runTokenRevoke } = await import('../actions/serve.js');
      runTokenRevoke(id, out);
    });
}
