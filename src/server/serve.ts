/** `kiln serve`: the API and the inbox on a local port, over the Temporal server the CLI uses. */
import { serve, type ServerType } from '@hono/node-server';
import { loadApprovalKey } from '../auth/attestation.js';
import { connectClient, temporalSettings } from '../temporal/connection.js';
import { registerSearchAttributes } from '../temporal/register-search-attributes.js';
import { UsageError } from '../shared/errors.js';
import { createApp } from './app.js';
import { TemporalBackend } from './temporal-backend.js';
import { loadTenants, tenantsPath } from './tenants.js';
import { TokenStore, tokensPath } from './tokens.js';
import { settings as kilnSettings } from '../settings.js';

export interface ServeOptions {
  port?: string;
  host?: string;
  tenants?: string;
  /** `--allow-scripted-model` (or KILN_SERVE_ALLOW_SCRIPTED=1): accept `scripted:FILE` models, for development */
  allowScriptedModel?: boolean;
}

export async function runServer(o: ServeOptions, print: (line: string) => void): Promise<{ server: ServerType; close: () => Promise<void> }> {
  const port = o.port === undefined ? 8080 : Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number 0-65535`);
  const host = o.host ?? '127.0.0.1';
  const tenantsFile = o.tenants ?? tenantsPath();
  loadTenants(tenantsFile); // a broken file stops the start, not the first request
  const settings = temporalSettings();
  const { client, connection } = await connectClient(settings);
  try {
    await registerSearchAttributes(connection, settings.namespace);
  } catch (err) {
    print(`kiln serve: ${(err as Error).message}`);
  }
  const approvalKey = loadApprovalKey({ create: true })!;
  const app = createApp({
    backend: new TemporalBackend(client, settings.taskQueue, approvalKey),
    tokens: new TokenStore(tokensPath()),
    // read per request: an operator's edit applies without a restart
    tenants: () => loadTenants(tenantsFile),
    approvalKey,
    allowScriptedModels: o.allowScriptedModel === true || kilnSettings().serveAllowScripted,
  });
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  const addr = server.address();
  const bound = typeof addr === 'object' && addr ? `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}` : `${host}:${port}`;
  print(`kiln serve: API and inbox on ${bound} (Temporal ${settings.address}, tenants ${tenantsFile})`);
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) print('kiln serve: listening beyond this host without TLS: put it behind a TLS proxy');
  return {
    server,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await connection.close();
    },
  };
}
