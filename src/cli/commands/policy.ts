/** `kiln policy check|redact|test`: dry-run the policy (actions/policy.ts). */
import type { Command } from 'commander';

export function addPolicyCommand(program: Command, out: (s: string) => void): void {
  const policy = program
    .command('policy')
    .summary('Check a tool call, redact text, test policy cases')
    .description('Dry-run the policy: check a call, redact text, test a case file');
  policy
    .command('check')
    .description('Print the decision, rule and reason for one tool call as a run would see it')
    .requiredOption('--workspace <dir>', 'the workspace the call runs in')
    .requiredOption('--tool <name>', 'tool name')
    .requiredOption('--input <json>', 'tool input as JSON')
    .option('--mode <mode>', 'approval mode: strict, default or auto', 'default')
    .option('--json', 'print one JSON object')
    .option('--explain', 'for run_command: print the parsed shell structure the policy judged')
    .action(async (o: { workspace: string; tool: string; input: string; mode: string; json?: boolean; explain?: boolean }) => {
      const { policyCheck } = await import('../actions/policy.js');
      await policyCheck(o, out);
    });
  policy
    .command('redact')
    .description('Redact secrets from stdin to stdout')
    .action(async () => {
      const { policyRedact } = await import('../actions/policy.js');
      await policyRedact();
    });
  policy
    .command('test')
    .description('Run a JSON-lines file of policy cases; prints mismatches and "N passed, M failed"')
    .argument('<file>')
    .option('--policy <file>', 'a policy config to test instead of the default')
    .option('--json', 'print the results as JSON')
    .action(async (file: string, o: { policy?: string; json?: boolean }) => {
      const { policyTest } = await import('../actions/policy.js');
      const ok = await policyTest(file, o, out);
      if (!ok) process.exitCode = 1;
    });
}
