/** `kiln serve`: the HTTP API and the approval inbox (src/server/, actions/serve.ts). */
import type { Command } from 'commander';

export function addServeCommand(program: Command, out: (s: string) => void): void {
  program
    .command('serve')
    .summary('Serve the HTTP API and the approval inbox')
    .description(
      'Serve the HTTP API (bearer tokens, tenants, OpenAPI at /openapi.json) and the approval inbox at /, over the Temporal server at TEMPORAL_ADDRESS (docs/server.md)',
    )
    .option('--port <n>', 'port to listen on', '8080')
    .option('--host <addr>', 'address to bind (loopback by default: put a TLS proxy in front to serve beyond this host)', '127.0.0.1')
    .option('--tenants <file>', 'tenant settings (default: $KILN_HOME/server/tenants.json)')
    .option('--allow-scripted-model', 'accept scripted:FILE models, which read a file on this host: for development only (also KILN_SERVE_ALLOW_SCRIPTED=1)')
    .action(async (o: { port: string; host: string; tenants?: string; allowScriptedModel?: boolean }) => {
      const { runServe } = await import('../actions/serve.js');
      await runServe(o, out);
    });
}
