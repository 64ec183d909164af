/** `kiln sandbox exec CMD…`: run a command exactly as run_command would. */
import { Option, type Command } from 'commander';

export function addSandboxCommand(program: Command): void {
  const sandbox = program
    .command('sandbox')
    .summary('Run a command in the sandbox as run_command would')
    .description('Run commands exactly as run_command would');
  sandbox
    .command('exec')
    .description('Run one command in the sandbox (same limits and environment as a run) and exit with its code')
    .requiredOption('--workspace <dir>', 'the directory the command may write to')
    .option('--timeout <ms>', 'kill it after this many milliseconds', '120000')
    .addOption(new Option('--sandbox <mode>', 'bwrap or off').choices(['bwrap', 'off']).default('bwrap'))
    .argument('<cmd...>')
    .action(async (cmd: string[], o: { workspace: string; timeout: string; sandbox: 'bwrap' | 'off' }) => {
      const { runSandboxExec } = await import('../../sandbox/index.js');
      const code = await runSandboxExec(
        { workspace: o.workspace, timeoutMs: Number(o.timeout), command: cmd, mode: o.sandbox },
        { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) },
      );
      process.exitCode = code;
    });
}
