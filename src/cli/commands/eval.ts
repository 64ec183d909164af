/** `kiln eval`: run an evaluation suite and score every run (actions/eval.ts). */
import type { Command } from 'commander';
import { collect } from '../program.js';
// the type only: the action's module loads when the command runs
import type { EvalFlags } from '../actions/eval.js';

export function addEvalCommand(program: Command, out: (s: string) => void): void {
  program
    .command('eval')
    .summary('Run an evaluation suite and score every run')
    .description('Run an evaluation suite of scripted or real-model tasks and score every run')
    .option('--suite <dir>', 'the suite to run (default: the bundled one)')
    .option('--repeat <n>', 'runs per task', '3')
    .option('--model <m>', "model id for every task (needs ANTHROPIC_API_KEY); default: each task's script")
    .option('--out <dir>', 'where the report goes (default: a new folder under $KILN_HOME/evals)')
    .option('--task <name>', 'only this task (repeatable)', collect)
    .option('--attempts <n>', 'also run every task as N attempts at once (2 to 8) and compare it with one attempt')
    .option('--review <mode>', 'the independent review of every run: on or required; the report judges the reviewer against the hidden checks')
    .option('--review-model <m>', "the reviewer's model for every run (with --review; default the run's): a model id, or scripted:FILE whose reviews answer it")
    .option('--json', 'make the last line one JSON object with totals and runs')
    .action(async (o: EvalFlags) => {
      const { runEval } = await import('../actions/eval.js');
      const ok = await runEval(o, out);
      if (!ok) process.exitCode = 1;
    });
}
