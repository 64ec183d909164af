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
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * Where the UI finds Kiln's codec: a path on the UI's own origin, so the browser's fetch carries
 * the guard's cookie (same-origin) and no secret has to be in the UI's settings, which any local
 * process can read, or in the dev server's arguments, which any local user can.
 */
export const UI_CODEC_PATH = '/kiln-codec';
const CODEC_OP = new RegExp(`^${UI_CODEC_PATH}/(encode|decode)$`);
const LOGIN = `${UI_CODEC_PATH}/login`;
const COOKIE = 'kiln-codec';

/** The codec the guard forwards to, and the token that server wants. */
export interface GuardedCodec {
  url: string;
  token: string;
}

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (given: string | undefined, secret: string) => given !== undefined && timingSafeEqual(digest(given), digest(secret));

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** Write actions the UI may still send: answering an approval, or a run that needs a person. */
const ALLOWED_WRITES = [
  /^\/api\/v1\/namespaces\/[^/]+\/workflows\/[^/]+\/(?:signal|update)\/(?:approve|human)$/,
  /^\/api\/v1\/namespaces\/[^/]+\/workflows\/[^/]+\/query\/[^/]+$/,
];
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface UiGuard {
  url: string;
  /**
   * With a codec: the link that lets one browser see runs decrypted (it sets the guard's cookie).
   * Said only to the person who started `kiln dev`, in its output.
   */
  codecLogin?: string;
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
  if (CODEC_OP.test(path) && (req.method === 'POST' || req.method === 'OPTIONS')) return undefined;
  if (!READ_METHODS.has(req.method.toUpperCase()) && !ALLOWED_WRITES.some((re) => re.test(path))) {
    return `${req.method} ${path}: write actions from the Web UI are off except approvals (use the kiln CLI)`;
  }
  return undefined;
}

/** upstreamPort names the UI in the Host header; upstreamSocket, when set, is how it is reached (netns-bridge.ts). */
export async function startUiGuard(o: { port: number; upstreamPort: number; upstreamSocket?: string; codec?: GuardedCodec }): Promise<UiGuard> {
  // the code is what the person is shown; the session is what their browser keeps: a code seen
  // in a browser's history is not the cookie
  const loginCode = randomBytes(24).toString('base64url');
  const session = randomBytes(32).toString('base64url');
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
    const url = new URL(req.url ?? '/', 'http://guard');
    if (o.codec && url.pathname.startsWith(`${UI_CODEC_PATH}/`)) {
      codecRoute(req, res, url, o.codec, { loginCode, session });
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
  const url = `http://127.0.0.1:${o.port}`;
  return {
    url,
    ...(o.codec ? { codecLogin: `${url}${LOGIN}?code=${loginCode}` } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The login link, and encode/decode for a browser holding the session cookie, forwarded with the codec's token. */
function codecRoute(req: IncomingMessage, res: ServerResponse, url: URL, codec: GuardedCodec, secrets: { loginCode: string; session: string }): void {
  const answer = (status: number, message: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify({ error: message }));
  };
  if (url.pathname === LOGIN && req.method === 'GET') {
    if (!same(url.searchParams.get('code') ?? undefined, secrets.loginCode)) return answer(403, 'wrong or missing code: open the link `kiln dev` printed');
    // HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it; the path keeps it off every other request
    res.writeHead(303, {
      location: '/',
      'cache-control': 'no-store',
      'set-cookie': `${COOKIE}=${secrets.session}; HttpOnly; SameSite=Strict; Path=${UI_CODEC_PATH}/`,
    });
    res.end();
    return;
  }
  const op = CODEC_OP.exec(url.pathname)?.[1];
  if (!op) return answer(404, `POST ${UI_CODEC_PATH}/encode or /decode`);
  if (req.method === 'OPTIONS') {
    // same-origin requests need no CORS grant, and no other origin gets past the guard
    res.writeHead(204).end();
    return;
  }
  if (!same(cookie(req, COOKIE), secrets.session)) return answer(401, 'this browser has not opened the codec link that `kiln dev` printed');
  const target = new URL(`${codec.url}/${op}`);
  const up = httpRequest(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${codec.token}`,
        ...(req.headers['x-namespace'] ? { 'x-namespace': header(req, 'x-namespace')! } : {}),
      },
    },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      upRes.pipe(res);
    },
  );
  up.on('error', () => answer(502, 'the codec server is not answering'));
  req.pipe(up);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
