/** `kiln hint`, `kiln accept`, `kiln abandon`: decide what a run that needs a person does next. */
import type { Command } from 'commander';
import { approverFor } from '../../client/signed-approver.js';
import { runsModule, withRun } from '../with-run.js';

export function addHumanCommands(program: Command, out: (s: string) => void): void {
  for (const [name, action, summary, desc] of [
    ['hint', 'hint', 'Give a waiting run a hint; it tries once more', 'Give a run that needs a person a hint and let it try once more'],
    ['accept', 'accept', "Accept a waiting run's patch as it is", 'Keep the patch of a run that needs a person as it is (succeeded, accepted by you)'],
    ['abandon', 'abandon', 'End a waiting run as blocked', 'End a run that needs a person as blocked'],
  ] as const) {
    const c = program.command(name).summary(summary).description(desc).argument('<run>');
    if (action === 'hint') c.argument('<text>');
    c.option('--by <name>', 'who decides (default: your OS user)').action(async (runId: string, ...rest: unknown[]) => {
      const text = action === 'hint' ? (rest[0] as string) : undefined;
      const o = rest[action === 'hint' ? 1 : 0] as { by?: string };
      const { sendHuman } = await runsModule();
      await withRun(runId, async (handle, client) => {
        const by = await approverFor(handle, o.by, { kind: 'human', action, text });
        out(await sendHuman(client, handle, { action, text, by }));
      });
    });
  }
}
