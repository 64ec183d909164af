/**
 * `kiln`: start runs, follow them, answer approvals, read what they left (program.ts has what
 * every entry shares: the error handler, the help layout). Each command is declared in its own
 * file under commands/, which loads what it needs when it runs (actions/, the Temporal client):
 * `kiln --help` or a flag error needs none of it. The order here is the order `kiln --help` lists.
 */
import type { Command } from 'commander';
import { addApproveCommands } from './commands/approve.js';
import { addAuditCommand } from './commands/audit.js';
import { addBudgetCommand } from './commands/budget.js';
import { addCancelCommand } from './commands/cancel.js';
import { addCleanCommand } from './commands/clean.js';
import { addClusterCommand } from './commands/cluster.js';
import { addCodecServerCommand } from './commands/codec-server.js';
import { addDemoCommand } from './commands/demo.js';
import { addDeployCommand } from './commands/deploy.js';
import { addDevCommand } from './commands/dev.js';
import { addDiffCommand } from './commands/diff.js';
import { addEvalCommand } from './commands/eval.js';
import { addHumanCommands } from './commands/human.js';
import { addListCommand } from './commands/list.js';
import { addLogsCommand } from './commands/logs.js';
import { addPolicyCommand } from './commands/policy.js';
import { addRunCommand } from './commands/run.js';
import { addSandboxCommand } from './commands/sandbox.js';
import { addServeCommand } from './commands/serve.js';
import { addSetupCommand } from './commands/setup.js';
import { addStatusCommand } from './commands/status.js';
import { addTokenCommand } from './commands/token.js';
import { addTrustCommand } from './commands/trust.js';
import { addWaitCommand } from './commands/wait.js';
import { addWorkerCommand } from './commands/worker.js';
import { newProgram, runProgram } from './program.js';

export function buildProgram(out: (s: string) => void = (s) => process.stdout.write(s + '\n')): Command {
  const program = newProgram();
  addSetupCommand(program, out);
  addDevCommand(program, out);
  addCodecServerCommand(program, out);
  addServeCommand(program, out);
  addTokenCommand(program, out);
  addClusterCommand(program, out);
  addWorkerCommand(program, out);
  addDeployCommand(program, out);
  addTrustCommand(program, out);
  addRunCommand(program, out);
  addStatusCommand(program, out);
  addListCommand(program, out);
  addWaitCommand(program, out);
  addApproveCommands(program, out);
  addHumanCommands(program, out);
  addCancelCommand(program, out);
  addBudgetCommand(program, out);
  addCleanCommand(program, out);
  addLogsCommand(program, out);
  addAuditCommand(program, out);
  addDiffCommand(program, out);
  addDemoCommand(program, out);
  addEvalCommand(program, out);
  addPolicyCommand(program, out);
  addSandboxCommand(program);
  return program;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  await runProgram(buildProgram(), argv);
}
