/** `kiln codec-server`: the Web UI's remote codec for encrypted runs (actions/codec-server.ts). */
import type { Command } from 'commander';
import { UsageError } from '../../shared/errors.js';

export function addCodecServerCommand(program: Command, out: (s: string) => void): void {
  program
    .command('codec-server')
    .summary("Serve the Web UI's codec (encrypted runs)")
    .description(
      "Serve the Temporal Web UI's remote codec endpoint (POST /encode, /decode) with this machine's codec keys; only the UI's origin and holders of the token may use it",
    )
    .option('--port <n>', 'port on 127.0.0.1', '8234')
    .option('--origin <url>', 'the Web UI origin allowed by CORS', 'http://127.0.0.1:8233')
    .action(async (o: { port: string; origin: string }) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number`);
      const { runCodecServer } = await import('../actions/codec-server.js');
      await runCodecServer({ port, origin: o.origin }, out);
    });
}
