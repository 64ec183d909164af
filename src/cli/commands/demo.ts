/** `kiln demo`: the bundled example end to end on an embedded Temporal server (actions/demo.ts). */
import type { Command } from 'commander';

export function addDemoCommand(program: Command, out: (s: string) => void): void {
  program
    .command('demo')
    .summary('Run the bundled example end to end, no setup')
    .description('Run the bundled example end to end on an embedded Temporal server')
    .option('--yes', 'approve the approval the demo asks for automatically')
    .option('--json', 'make the last line of output a JSON summary')
    .option('--keep', 'keep the embedded server running afterwards for the Web UI')
    .action(async (o: { yes?: boolean; json?: boolean; keep?: boolean }) => {
      const { runDemo } = await import('../actions/demo.js');
      const ok = await runDemo(o, out);
      if (!ok) process.exitCode = 1;
    });
}
