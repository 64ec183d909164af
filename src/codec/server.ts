/**
 * The Temporal Web UI's remote codec endpoint (`POST …/encode`, `POST …/decode`, a JSON
 * `{payloads}` body, docs.temporal.io/codec-server): the UI shows encrypted runs decrypted for
 * the people who can reach it. Browsers are held to the UI's origin by CORS and to a token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
// CommonJS: Node's ESM loader finds no named exports in it
import proto from '@temporalio/proto';

/** A history page's payloads fit many times over; a body larger than this is refused unread. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

const PayloadMsg = proto.temporal.api.common.v1.Payload;

export interface CodecServer {
  /** where the codec listens, without the token */
  url: string;
  token: string;
  close(): Promise<void>;
}

export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Compared by digest so neither the length nor a prefix of the token leaks through timing. */
function sameToken(given: string | undefined, token: string): boolean {
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

/** Proto3 JSON (bytes as base64) ↔ Payload, as the protocol requires and the UI sends. */
function fromJson(body: unknown): Payload[] {
  const list = (body as { payloads?: unknown })?.payloads;
  if (!Array.isArray(list)) throw new RequestError(400, 'expected a JSON body {"payloads": [...]}');
  return list.map((p) => PayloadMsg.fromObject(p as object));
}

function toJson(payloads: Payload[]): { payloads: unknown[] } {
  return { payloads: payloads.map((p) => PayloadMsg.toObject(PayloadMsg.create(p), { bytes: String })) };
}

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new RequestError(413, `body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new RequestError(400, 'body is not JSON');
  }
}

/** `origins`: the Web UI's origins (one UI may answer on several names, e.g. 127.0.0.1 and localhost). */
export async function startCodecServer(o: { codec: PayloadCodec; port: number; host?: string; origins: string[]; token: string }): Promise<CodecServer> {
  const allowed = new Set(o.origins.map((x) => new URL(x).origin));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const from = req.headers.origin;
    const origin = from !== undefined && allowed.has(from) ? from : undefined;
    const reply = (status: number, body?: unknown) => {
      const headers: Record<string, string> = { vary: 'Origin' };
      // only the UI's origin may read answers in a browser; others get no CORS grant at all
      if (origin) headers['access-control-allow-origin'] = origin;
      if (body !== undefined) headers['content-type'] = 'application/json';
      res.writeHead(status, headers).end(body === undefined ? undefined : JSON.stringify(body));
    };
    // a page on another origin is refused before anything is read, preflight or not
    if (from !== undefined && !origin) return reply(403, { error: `origin ${from} is not allowed (only ${[...allowed].join(', ')})` });
    if (req.method === 'OPTIONS') {
      res
        .writeHead(204, {
          vary: 'Origin',
          ...(origin ? { 'access-control-allow-origin': origin } : {}),
          'access-control-allow-methods': 'POST',
          'access-control-allow-headers': 'authorization, content-type, x-namespace',
          'access-control-max-age': '600',
        })
        .end();
      return;
    }
    const segments = new URL(req.url ?? '/', 'http://codec').pathname.split('/').filter(Boolean);
    const op = segments.at(-1);
    const pathToken = segments.length === 2 ? segments[0] : undefined;
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!sameToken(bearer, o.token) && !sameToken(pathToken, o.token)) {
      return reply(401, { error: 'missing or wrong token: send Authorization: Bearer <token> (printed by `kiln codec-server`)' });
    }
    if (req.method !== 'POST' || (op !== 'encode' && op !== 'decode') || segments.length > 2) {
      return reply(404, { error: 'POST /encode or /decode' });
    }
    try {
      const payloads = fromJson(await readBody(req));
      const out = op === 'encode' ? await o.codec.encode(payloads) : await o.codec.decode(payloads);
      reply(200, toJson(out));
    } catch (err) {
      // a codec error names the key id and what to do; it never carries payload content
      reply(err instanceof RequestError ? err.status : 422, { error: (err as Error).message });
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  const host = o.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    token: o.token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
