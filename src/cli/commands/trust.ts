/** `kiln trust [--repo DIR] [--revoke]`: let a repo's own config loosen your policy (actions/trust.ts). */
import type { Command } from 'commander';

export function addTrustCommand(program: Command, out: (s: string) => void): void {
  program
    .command('trust')
    .summary("Let a repo's own config loosen your policy")
    .description(
      "Trust this repo's .kiln/policy.json, .kiln/config and AGENTS.md as they are now: their loosenings (allowed commands, sensitive files, unprotected paths, setup, checks) apply until any of them changes",
    )
    .option('--repo <dir>', 'the repository (default: the current directory)')
    .option('--revoke', 'forget the trust')
    .action(async (o: { repo?: string; revoke?: boolean }) => {
      const { runTrust } = await import('../actions/trust.js');
      await runTrust(o, out);
    });
}
