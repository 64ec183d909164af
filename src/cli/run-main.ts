/**
 * The entry of `kiln run` alone: built into one bundle (scripts/bundle-cli.mjs) that bin/kiln.js
 * loads for `kiln run`, so a run's first model request does not wait for Node to resolve, read
 * and link the few hundred files of the Temporal client (docs/bench.md). The same command and
 * the same error handling as the full CLI: it is the same code.
 */
import { addRunCommand } from './commands/run.js';
import { newProgram, runProgram } from './program.js';

export async function main(argv: string[] = process.argv): Promise<void> {
  const program = newProgram();
  addRunCommand(program, (s) => process.stdout.write(s + '\n'));
  await runProgram(program, argv);
}
