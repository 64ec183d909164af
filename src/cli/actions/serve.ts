/** `kiln serve` and `kiln token`: the HTTP API's process and its bearer tokens. */
import { runServer, type ServeOptions } from '../../server/serve.js';
import { TokenStore, tokensPath } from '../../server/tokens.js';

export async function runServe(o: ServeOptions, out: (s: string) => void): Promise<void> {
  const s = await runServer(o, out);
  out('Ctrl-C stops the server (runs go on in Temporal)');
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await s.close();
}

export function runTokenCreate(o: { tenant: string; user: string; role?: string }, out: (s: string) => void): void {
  const store = new TokenStore(tokensPath());
  const { token, record } = store.create(o);
  // the secret on stdout alone, so `TOKEN=$(kiln token create …)` works; the rest to stderr
  out(token);
  process.stderr.write(`token ${record.id} for ${record.user} (tenant ${record.tenant}, role ${record.role}); shown once, stored hashed in ${store.file}\n`);
}

export function runTokenList(o: { json?: boolean }, out: (s: string) => void): void {
  const tokens = new TokenStore(tokensPath()).list().map(({ sha256: _, ...t }) => t);
  if (o.json) return out(JSON.stringify(tokens));
  if (!tokens.length) return out('no tokens: `kiln token create --tenant T --user U --role runner` makes one');
  for (const t of tokens) out(`${t.id}  ${t.tenant}/${t.user}  ${t.role.padEnd(8)}  created ${t.createdAt}${t.revokedAt ? `  REVOKED ${t.revokedAt}` : ''}`);
}

export function runTokenRevoke(id: string, out: (s: string) => void): void {
  const t = new TokenStore(tokensPath()).revoke(id);
  out(`revoked ${t.id} (${t.tenant}/${t.user}): it is refused from the next request on`);
}
