/**
 * A guard in front of the dev server's Web UI. The UI that `temporal server start-dev` v1.5.1
 * embeds takes no configuration (no write-action switches, no allowed origins: the CLI builds
 * its config in code), and it answered foreign Host and Origin headers and served its HTTP API's
 * write actions to anyone. The guard is what the browser talks to:
 *
 * - Host must name this loopback listener (a DNS-rebinding page names its own host);
 * - Origin and Referer, when sent, must be this listener (a cross-site page's are not);
 * - of the write actions only what approvals need passes: the `approve` and `human` signals and
 *   updates, and queries (read-only). Starting, terminating, cancelling, resetting workflows and
 *   batch operations are refused.
 *
 * The UI itself listens in the dev server's own network namespace, reached only through a unix
 * socket (netns-bridge.ts), so a page that learns its port finds nothing on the host's loopback.
 * A process on this machine running as the same user can still use Temporal's gRPC port (and
 * the sockets); Kiln's own commands cannot reach the host's loopback (the sandbox), and a worker
 * bounds what a run request may ask for; a shared setup uses Temporal's authorizer
 * (docs/team-setup.md).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** Write actions the UI may still send: answering an approval, or a run that needs a person. */
const ALLOWED_WRITES = [
  /^\/api\/v1\/namespaces\/[^/]+\/workflows\/[^/]+\/(?:signal|update)\/(?:approve|human)$/,
  /^\/api\/v1\/namespaces\/[^/]+\/workflows\/[^/]+\/query\/[^/]+$/,
];
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface UiGuard {
  url: string;
  close(): Promise<void>;
}

/** Why a request is refused, or undefined when it may pass. Pure, for tests and the server alike. */
export function uiRequestProblem(req: { method: string; path: string; host?: string; origin?: string; referer?: string }, port: number): string | undefined {
  const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  if (!req.host || !hosts.has(req.host.toLowerCase())) return `foreign Host ${JSON.stringify(req.host ?? '')}`;
  for (const [name, value] of [
    ['Origin', req.origin],
    ['Referer', req.referer],
  ] as const) {
    if (value === undefined || value === '') continue;
    let h: string;
    try {
      const u = new URL(value);
      h = u.protocol === 'http:' ? u.host.toLowerCase() : '';
    } catch {
      h = '';
    }
    if (!hosts.has(h)) return `foreign ${name} ${JSON.stringify(value)}`;
  }
  const path = req.path.split('?')[0]!;
  if (!READ_METHODS.has(req.method.toUpperCase()) && !ALLOWED_WRITES.some((re) => re.test(path))) {
    return `${req.method} ${path}: write actions from the Web UI are off except approvals (use the kiln CLI)`;
  }
  return undefined;
}

/** upstreamPort names the UI in the Host header; upstreamSocket, when set, is how it is reached (netns-bridge.ts). */
export async function startUiGuard(o: { port: number; upstreamPort: number; upstreamSocket?: string }): Promise<UiGuard> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const problem = uiRequestProblem(
      { method: req.method ?? 'GET', path: req.url ?? '/', host: req.headers.host, origin: header(req, 'origin'), referer: header(req, 'referer') },
      o.port,
    );
    if (problem) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', 'x-kiln-guard': 'refused' });
      res.end(`refused by kiln: ${problem}\n`);
      return;
    }
    const up = httpRequest(
      {
        ...(o.upstreamSocket ? { socketPath: o.upstreamSocket } : { host: '127.0.0.1', port: o.upstreamPort }),
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: `127.0.0.1:${o.upstreamPort}` },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`the Web UI is not answering: ${err.message}\n`);
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${o.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
