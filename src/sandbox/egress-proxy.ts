/*
 * The way out for a sandboxed MCP server whose config lists hosts. The server keeps a network
 * namespace of its own with only loopback; this proxy runs in the worker, on a unix socket bound
 * into its sandbox (the forwarder in egress-forwarder.ts carries its 127.0.0.1 port there). It
 * takes a CONNECT tunnel, or a plain HTTP request in absolute form, to a host:port the list names
 * only; resolves the name here, on the host; refuses when any address it resolves to is one the
 * server may not reach (egress-addresses.ts); and connects to the address it checked, so a name
 * that resolves differently a moment later (DNS rebinding) changes nothing. A refusal is answered
 * 403 with the reason, and reported to the caller, which records it in the run's events.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { chmodSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { egressRefusal } from './egress-addresses.js';

/** The most of a request's head read before it is judged; a longer one is refused. */
const HEAD_MAX_BYTES = 16 * 1024;
const HEAD_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** Connections one server may hold open at once. */
const MAX_CONNECTIONS = 64;
/** Refusals reported per proxy; a server that keeps trying is said once more, then not again. */
const REPORTS_MAX = 100;

export interface EgressProxyOptions {
  /** the unix socket to listen on (its directory private to the worker) */
  socketPath: string;
  /** whether the list names host:port; `tunnel`: a CONNECT request */
  allows(host: string, port: number, tunnel: boolean): boolean;
  /** the operator's networks that may be reached though private (KILN_MCP_ALLOW_NETS) */
  allowNets: readonly string[];
  /** one refused request: what was asked for and why not */
  refused(target: string, why: string): void;
  /** the host's resolver; tests give their own */
  lookup?: (host: string) => Promise<{ address: string }[]>;
}

export interface EgressProxy {
  close(): Promise<void>;
}

interface Request {
  tunnel: boolean;
  host: string;
  port: number;
  /** for plain HTTP: the head to send upstream, in origin form */
  head?: Buffer;
}

class Refusal extends Error {
  constructor(
    readonly status: 403 | 400 | 502,
    message: string,
    /** nothing was asked (the connection went before a request): not worth an event */
    readonly quiet = false,
  ) {
    super(message);
  }
}

const defaultLookup = (host: string) => dnsLookup(host, { all: true, verbatim: true });

function answer(socket: Socket, status: number, why: string): void {
  const text = status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway';
  const body = `kiln: ${why}\n`;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** The request's head (up to the blank line) and whatever came after it. */
function readHead(socket: Socket): Promise<{ head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const done = (err?: Error, value?: { head: string; rest: Buffer }) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      // what the client sends while the name is resolved (a body, a TLS hello sent ahead) waits for the pipe
      socket.pause();
      if (err) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const at = buf.indexOf('\r\n\r\n');
      if (at >= 0) done(undefined, { head: buf.subarray(0, at).toString('latin1'), rest: buf.subarray(at + 4) });
      else if (buf.length > HEAD_MAX_BYTES) done(new Refusal(400, `a request head larger than ${HEAD_MAX_BYTES} bytes`));
    };
    const onEnd = () => done(new Refusal(400, 'the connection ended before a request', true));
    const timer = setTimeout(() => done(new Refusal(400, 'no request within 10 s')), HEAD_TIMEOUT_MS);
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
  });
}

/** CONNECT host:port, or METHOD http://host[:port]/path with its head rewritten for the origin. */
function parseRequest(head: string): Request {
  const [line = '', ...headers] = head.split('\r\n');
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(line);
  if (!m) throw new Refusal(400, 'not an HTTP/1 request');
  const [, method, target] = m as unknown as [string, string, string];
  if (method === 'CONNECT') {
    const t = /^([^:[\]\s/]+):(\d{1,5})$/.exec(target);
    if (!t) throw new Refusal(400, `CONNECT ${target.slice(0, 100)}: expected host:port (an IPv6 address is not accepted)`);
    return { tunnel: true, host: t[1]!.toLowerCase().replace(/\.$/, ''), port: Number(t[2]) };
  }
  if (!target.startsWith('http://') || !URL.canParse(target))
    throw new Refusal(400, `${method} ${target.slice(0, 100)}: a proxy takes http:// URLs; use CONNECT for https`);
  const url = new URL(target);
  if (url.username || url.password || url.hostname.startsWith('[')) throw new Refusal(400, `${method} ${target.slice(0, 100)}: not a host this proxy takes`);
  // one request per connection: a second one on it would go to this host whatever its URL said
  const kept = headers.filter((h) => !/^(host|connection|keep-alive|proxy-[a-z-]*|upgrade)\s*:/i.test(h));
  const origin = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, ...kept, 'Connection: close', '', ''].join('\r\n');
  return { tunnel: false, host: url.hostname.toLowerCase().replace(/\.$/, ''), port: Number(url.port || 80), head: Buffer.from(origin, 'latin1') };
}

/** The addresses the name resolves to, every one of them allowed; refused otherwise. */
async function checkedAddresses(req: Request, o: EgressProxyOptions): Promise<string[]> {
  let addrs: string[];
  if (isIP(req.host)) addrs = [req.host];
  else {
    try {
      addrs = (await (o.lookup ?? defaultLookup)(req.host)).map((a) => a.address);
    } catch (err) {
      throw new Refusal(502, `${req.host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (!addrs.length) throw new Refusal(502, `${req.host} does not resolve`);
  }
  for (const a of addrs) {
    const why = egressRefusal(a, o.allowNets);
    if (why)
      throw new Refusal(
        403,
        `${req.host} resolves to ${a}, ${why}: not reachable from an MCP server (an operator may allow such networks: KILN_MCP_ALLOW_NETS)`,
      );
  }
  return addrs;
}

function connectTo(addr: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: addr, port, allowHalfOpen: true, timeout: CONNECT_TIMEOUT_MS });
    s.once('connect', () => {
      s.setTimeout(0);
      resolve(s);
    });
    s.once('timeout', () => {
      s.destroy();
      reject(new Error('timed out'));
    });
    s.once('error', reject);
  });
}

/** The first of the checked addresses that answers; nothing is resolved again. */
async function upstream(addrs: string[], port: number): Promise<Socket> {
  let last: Error | undefined;
  for (const a of addrs) {
    try {
      return await connectTo(a, port);
    } catch (err) {
      last = err as Error;
    }
  }
  throw new Refusal(502, `could not connect to ${addrs.join(', ')} port ${port}: ${(last as NodeJS.ErrnoException)?.code ?? last?.message}`);
}

function pipeBoth(a: Socket, b: Socket): void {
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end);
  b.on('error', end);
  a.on('close', end);
  b.on('close', end);
  a.pipe(b);
  b.pipe(a);
}

async function serve(client: Socket, o: EgressProxyOptions, report: (target: string, why: string) => void): Promise<void> {
  let target = '(no request)';
  try {
    const { head, rest } = await readHead(client);
    const req = parseRequest(head);
    target = `${req.host}:${req.port}`;
    if (!o.allows(req.host, req.port, req.tunnel))
      throw new Refusal(403, `${target} is not in this MCP server's network.hosts${req.tunnel ? '' : ' (for plain HTTP)'}`);
    const server = await upstream(await checkedAddresses(req, o), req.port);
    if (client.destroyed) return void server.destroy();
    if (req.tunnel) client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    else server.write(req.head!);
    if (rest.length) server.write(rest);
    pipeBoth(client, server);
  } catch (err) {
    const r = err instanceof Refusal ? err : new Refusal(502, (err as Error).message);
    if (r.status !== 502 && !r.quiet) report(target, r.message);
    if (!client.destroyed) answer(client, r.status, r.message);
  }
}

/** Starts the proxy on `socketPath`; it stops with close(), which the server's own end calls. */
export async function startEgressProxy(o: EgressProxyOptions): Promise<EgressProxy> {
  let reports = 0;
  const report = (target: string, why: string) => {
    reports++;
    if (reports <= REPORTS_MAX) o.refused(target, why);
    else if (reports === REPORTS_MAX + 1) o.refused('(more)', `more than ${REPORTS_MAX} refusals: the rest are not recorded`);
  };
  const open = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    void serve(client, o, report);
  });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.socketPath, () => resolve());
  });
  // the sandbox's user is the socket's owner seen from inside (its user namespace maps it so)
  chmodSync(o.socketPath, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
