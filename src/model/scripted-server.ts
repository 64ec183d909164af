import { createHash } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { SCRIPT_ERROR_TYPE } from './errors.js';
import { PromptCacheLedger } from './prompt-cache.js';
import { loadScript, ScriptError, type Script, type ScriptedErrorSpec } from './script.js';
import { unmetExpectation } from './script-expect.js';
import { scriptedMessage, withTurn, type ScriptedMessage } from './scripted-reply.js';
import { chatChunksOf, ChatRequestSchema, messagesRequestOf } from './scripted-openai.js';
import { MessagesRequestSchema, type MessagesRequest } from './scripted-request.js';
import { describeIssues } from '../shared/zod-error.js';

export interface ScriptedServer {
  /** base URL for the SDK, e.g. http://127.0.0.1:41234 */
  url: string;
  close(): Promise<void>;
}

/** Request headers that tell the stateless server which script, run and turn a request is. */
export const SCRIPT_HEADER = 'x-kiln-script';
export const RUN_HEADER = 'x-kiln-run';
export const TURN_HEADER = 'x-kiln-turn';
/** `reviewer`: the request is review N (TURN_HEADER), answered from the script's `reviews` */
export const ROLE_HEADER = 'x-kiln-role';

/** Long agent conversations run to a few MB of JSON; this only stops a runaway client. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** (run, turn) error counters kept; old ones are dropped first. */
const MAX_ERROR_COUNTERS = 10_000;

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

function errorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

function scriptFailure(message: string): HttpFailure {
  return new HttpFailure(400, SCRIPT_ERROR_TYPE, message);
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const id = createHash('sha256').update(text).digest('hex').slice(0, 24);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': `req_kiln_${id}`,
    'x-kiln-scripted': 'true',
    ...headers,
  });
  res.end(text);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpFailure(413, 'request_too_large', `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Header values arrive URI-encoded (see client.ts); a plain value is taken as it is. */
function header(req: http.IncomingMessage, name: string): string | undefined {
  const raw = req.headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined) return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

async function requestJson(req: http.IncomingMessage): Promise<unknown> {
  const raw = await readBody(req);
  try {
    return JSON.parse(raw);
  } catch {
    throw new HttpFailure(400, 'invalid_request_error', 'request body is not valid JSON');
  }
}

/** An error reply in the shape of the API the request came in on. */
function failed(res: http.ServerResponse, wire: 'anthropic' | 'openai'): (err: unknown) => void {
  return (err) => {
    const f = err instanceof HttpFailure ? err : new HttpFailure(500, 'api_error', `scripted server failed: ${String(err)}`);
    const body =
      wire === 'openai'
        ? { error: { type: f.type, message: f.message, code: null, param: null } }
        : { type: 'error', error: { type: f.type, message: f.message } };
    send(res, f.status, body, f.headers);
  };
}

function sendChat(res: http.ServerResponse, message: ScriptedMessage, stream: boolean): void {
  if (!stream)
    return send(res, 400, {
      error: { type: 'invalid_request_error', message: 'the Kiln scripted server answers Chat Completions streamed only: send stream: true' },
    });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'x-kiln-scripted': 'true' });
  res.end(chatChunksOf(message));
}

/**
 * The scripted, Anthropic-compatible model server: `POST /v1/messages` answers turn N of
 * a run with step N of the script named in the request headers (format: SCRIPT_FORMAT.md).
 * Position comes from the caller, so the server holds no conversation state: a restarted
 * worker or two runs at once cannot confuse it. What it does remember, per process, is
 * how many injected errors each (run, turn) has had and which prompt prefixes each run
 * has cached.
 */
export async function startScriptedServer(
  opts: {
    port?: number;
    host?: string;
    /** let the process exit while the server is still listening (the shared in-process server) */
    unref?: boolean;
  } = {},
): Promise<ScriptedServer> {
  const ledger = new PromptCacheLedger();
  const errorsSent = new Map<string, number>();

  function injectedError(spec: ScriptedErrorSpec, key: string, where: string): HttpFailure | undefined {
    const sent = errorsSent.get(key) ?? 0;
    if (spec.times !== 'always' && sent >= spec.times) return undefined;
    errorsSent.delete(key);
    errorsSent.set(key, sent + 1);
    if (errorsSent.size > MAX_ERROR_COUNTERS) {
      const oldest = errorsSent.keys().next();
      if (!oldest.done) errorsSent.delete(oldest.value);
    }
    const headers: Record<string, string> = {};
    if (spec.retry_after_s !== undefined) {
      headers['retry-after'] = String(Math.ceil(spec.retry_after_s));
      headers['retry-after-ms'] = String(Math.round(spec.retry_after_s * 1000));
    }
    const message = spec.message ?? `scripted ${spec.status} (${where}, request ${sent + 1})`;
    return new HttpFailure(spec.status, spec.type ?? errorType(spec.status), message, headers);
  }

  async function answer(req: http.IncomingMessage): Promise<unknown> {
    const json = await requestJson(req);
    const parsed = MessagesRequestSchema.safeParse(json);
    if (!parsed.success) {
      throw new HttpFailure(400, 'invalid_request_error', describeIssues(parsed.error, { input: json, root: 'body', max: 1 }));
    }
    const body: MessagesRequest = parsed.data;
    if (body.stream === true)
      throw new HttpFailure(400, 'invalid_request_error', 'the Kiln scripted server does not stream: call messages.create without stream: true');
    return reply(req, body);
  }

  /** A Chat Completions request: the same script, read through the Messages request it stands for. */
  async function answerChat(req: http.IncomingMessage): Promise<{ message: ScriptedMessage; stream: boolean }> {
    const json = await requestJson(req);
    const parsed = ChatRequestSchema.safeParse(json);
    if (!parsed.success) throw new HttpFailure(400, 'invalid_request_error', describeIssues(parsed.error, { input: json, root: 'body', max: 1 }));
    return { message: await reply(req, messagesRequestOf(parsed.data)), stream: parsed.data.stream === true };
  }

  async function reply(req: http.IncomingMessage, body: MessagesRequest): Promise<ScriptedMessage> {
    const scriptPath = header(req, SCRIPT_HEADER);
    if (!scriptPath || !path.isAbsolute(scriptPath)) throw scriptFailure(`request has no ${SCRIPT_HEADER} header with an absolute script path`);
    const turnText = header(req, TURN_HEADER) ?? '';
    const turn = Number(turnText);
    if (!/^\d+$/.test(turnText) || turn < 1)
      throw scriptFailure(`request has no valid ${TURN_HEADER} header (a turn number from 1), got ${JSON.stringify(turnText)}`);
    const runId = header(req, RUN_HEADER) ?? 'default';

    let script: Script;
    try {
      script = await loadScript(scriptPath);
    } catch (err) {
      if (err instanceof ScriptError) throw scriptFailure(err.message);
      throw err;
    }
    const reviewing = header(req, ROLE_HEADER) === 'reviewer';
    const list = reviewing ? script.reviews : script.steps;
    const what = reviewing ? 'review' : 'step';
    const step = list[turn - 1];
    if (!step)
      throw scriptFailure(
        `script ${script.name} ${what} ${turn}: the script ends after ${list.length} ${what}${list.length === 1 ? '' : 's'}, but the run asked for ${reviewing ? 'review' : 'turn'} ${turn}`,
      );
    const where = `script ${script.name} ${what} ${turn}${step.origin === `${what} ${turn}` ? '' : ` (${step.origin})`}`;

    const unmet = unmetExpectation(withTurn(step.expect, turn), body);
    if (unmet) throw scriptFailure(`${where}: ${unmet}`);
    if (step.error) {
      const failure = injectedError(step.error, `${runId}\u0000${script.file}\u0000${turn}`, where);
      if (failure) throw failure;
    }
    if (!step.text && !step.tool_use?.length) throw scriptFailure(`${where}: the step has no reply (only an error that always fails)`);
    return scriptedMessage({ step, runId: reviewing ? `${runId}:review` : runId, turn, usage: ledger.account(runId, body) });
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://scripted');
    if (req.method === 'GET' && url.pathname === '/health') return send(res, 200, { ok: true, scripted: true });
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions')
      return void answerChat(req).then(({ message, stream }) => sendChat(res, message, stream), failed(res, 'openai'));
    if (req.method !== 'POST' || url.pathname !== '/v1/messages') {
      req.resume();
      return send(res, 404, {
        type: 'error',
        error: {
          type: 'not_found_error',
          message: `the scripted server only serves POST /v1/messages and /v1/chat/completions, not ${req.method} ${url.pathname}`,
        },
      });
    }
    answer(req).then((message) => send(res, 200, message), failed(res, 'anthropic'));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (opts.unref) {
    server.unref();
    // kept-alive connections would otherwise hold the process open for seconds after the last turn
    server.on('connection', (socket) => socket.unref());
  }
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('scripted server has no TCP address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
