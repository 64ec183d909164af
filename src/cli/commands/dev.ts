/** `kiln dev`: the embedded Temporal dev server, its Web UI and a worker (actions/dev.ts). */
import { Option, type Command } from 'commander';
import { UsageError } from '../../shared/errors.js';

export function addDevCommand(program: Command, out: (s: string) => void): void {
  program
    .command('dev')
    .summary('Start a local Temporal server, Web UI and worker')
    .description('Start the embedded Temporal dev server (SQLite under KILN_HOME, Web UI) and a worker')
    .option('--no-worker', 'start only the server')
    .option('--port <n>', 'Temporal frontend port', '7233')
    .option('--ui-port <n>', 'Web UI port', '8233')
    .option('--db <file>', 'SQLite file (default: $KILN_HOME/temporal.db)')
    .option('--allow-sandbox-off', "as this worker's operator, let runs ask for --sandbox off (unsafe)")
    .option('--codec-endpoint <url>', "the Web UI's remote codec (default with codec keys set: a `kiln codec-server` started here)")
    .addOption(
      new Option(
        '--stranded <what>',
        'runs an earlier build started, which wait for a worker of that build: finish them on it (when kept under $KILN_HOME/builds), cancel them (artifacts written) or leave them (default: ask on a terminal, else leave)',
      ).choices(['finish', 'cancel', 'leave']),
    )
    .action(
      async (o: {
        worker: boolean;
        port: string;
        uiPort: string;
        db?: string;
        allowSandboxOff?: boolean;
        codecEndpoint?: string;
        stranded?: 'finish' | 'cancel' | 'leave';
      }) => {
        if (o.codecEndpoint !== undefined && !/^https?:\/\/[^\s]+$/.test(o.codecEndpoint))
          throw new UsageError(`--codec-endpoint ${o.codecEndpoint}: expected an http(s) URL`);
        const { runDev } = await import('../actions/dev.js');
        await runDev(
          {
            worker: o.worker,
            port: Number(o.port),
            uiPort: Number(o.uiPort),
            db: o.db,
            allowSandboxOff: o.allowSandboxOff === true,
            codecEndpoint: o.codecEndpoint,
            stranded: o.stranded,
          },
          out,
        );
      },
    );
}
