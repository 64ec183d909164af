/**
 * The fault-injecting, Anthropic-compatible model server: test tooling next to the scripted one
 * (./scripted-server.ts). A run reaches it through ANTHROPIC_BASE_URL with a real model name, so
 * the worker takes the production path (streaming, stall guard, idempotency key, error mapping)
 * and the test decides, request by request, what the "API" does: answer, or fail the way the
 * real one does (429 with retry-after, 529, 5xx, the spend-limit 429, a hang before the first
 * byte, a stall mid-stream, a reply that cannot be parsed, duplicate tool_use ids, a cut by
 * max_tokens). Every request is recorded with its headers and the usage it was told (what the
 * API would bill), so tests can count calls, keys and spend.
 */
import http from 'node:http';
import type Anthropic from '@anthropic-ai/sdk';
import { OPENAI_PING, openAIChunks, openAIErrorBody, responsesEvents } from './fault-server-openai.js';

export type FaultReplyBlock =
  | { type: 'text'; text: string }
  | {
      type: 'tool_use';
      /** null: the call is sent with no id (OpenAI-compatible servers that leave it out) */
      id?: string | null;
      name: string;
      input: unknown;
      /** sent as is: a cut or broken input */
      rawInput?: string;
      /** OpenAI mode: the index the call is sent at (servers that send parallel calls all at 0) */
      index?: number;
    };

export interface FaultReply {
  content: FaultReplyBlock[];
  stop_reason?: Anthropic.Message['stop_reason'];
  usage?: { input_tokens?: number; output_tokens?: number };
}

export type Fault =
  | { fault: 'status'; status: number; type?: string; message?: string; retryAfterS?: number }
  | { fault: 'rate_limit'; retryAfterS?: number }
  | { fault: 'overloaded' }
  | { fault: 'server_error'; status?: number }
  | { fault: 'spend_limit' }
  /** accept the request and never send a byte */
  | { fault: 'hang' }
  /** send the headers and the start of the stream, then nothing */
  | { fault: 'stall' }
  /** a model that thinks: the start of the stream, a ping now and then for `ms`, then the reply (none: pings until the client goes) */
  | { fault: 'slow'; ms: number; reply?: FaultReply }
  /** a 200 whose body is not a reply */
  | { fault: 'malformed' }
  /** a reply streamed through its usage (message_delta), then an event that is not JSON: billed, and unreadable */
  | { fault: 'unreadable'; reply?: FaultReply }
  /** a reply streamed through its usage (message_delta), then pings and no message_stop until the client goes: billed, never whole */
  | { fault: 'held'; reply?: FaultReply };

/** One answer: a reply, or a fault. */
export type FaultStep = FaultReply | Fault;
/** Decided when the request arrives (a test can change the world first, or read the request). */
export type FaultPlan = FaultStep | ((req: RecordedRequest) => FaultStep | Promise<FaultStep>);

export interface RecordedRequest {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: { model?: string; stream?: boolean; messages?: Anthropic.MessageParam[]; [k: string]: unknown };
  /** what the server did: 'reply', a fault's name, or 'empty' when nothing was queued */
  answer: string;
  /** the usage the answer told the client (what the API bills), as far as it was sent; none for an error */
  served?: { input: number; output: number };
}

export interface FaultServer {
  url: string;
  /** queue answers, taken in order, one per request */
  push(...steps: FaultPlan[]): void;
  /** the answer for every request once the queue is empty (default: a 500 saying nothing was queued) */
  setDefault(step: FaultStep | undefined): void;
  readonly requests: RecordedRequest[];
  /** drop what is queued */
  clear(): void;
  close(): Promise<void>;
}

/** A reply with two tool_use blocks sharing one id (seen from real proxies; the API never should). */
export function duplicateIdsReply(a: { name: string; input: unknown }, b: { name: string; input: unknown }): FaultReply {
  return {
    content: [
      { type: 'tool_use', id: 'toolu_dup', ...a },
      { type: 'tool_use', id: 'toolu_dup', ...b },
    ],
    stop_reason: 'tool_use',
  };
}

/** A reply cut by max_tokens in the middle of a tool call's input: the JSON ends mid-string. */
export function maxTokensCutReply(name: string, input: Record<string, unknown>, keepChars: number): FaultReply {
  const raw = JSON.stringify(input);
  return { content: [{ type: 'tool_use', name, input, rawInput: raw.slice(0, keepChars) }], stop_reason: 'max_tokens' };
}

/** The event stream the Messages API sends for a finished message (for stand-ins that stream). */
export function streamedMessage(msg: Anthropic.Message): string {
  const reply: FaultReply = {
    content: msg.content.map((b) =>
      b.type === 'text'
        ? { type: 'text', text: b.text }
        : b.type === 'tool_use'
          ? { type: 'tool_use', id: b.id, name: b.name, input: b.input }
          : { type: 'text', text: '' },
    ),
  };
  return sseEvents(reply, msg).join('');
}

const isFault = (s: FaultStep): s is Fault => 'fault' in s;

/** The usage a reply's stream has told once message_start (`final`: message_delta) was sent. */
const told = (msg: Anthropic.Message, final: boolean) => ({ input: msg.usage.input_tokens, output: final ? msg.usage.output_tokens : 1 });

/** Pings as the API sends while the model thinks: the stream is alive, the reply not yet there. */
const PING_EVERY_MS = 400;

function slowly(res: http.ServerResponse, step: Extract<Fault, { fault: 'slow' }>, seq: number, recorded: RecordedRequest): void {
  const reply = step.reply ?? { content: [] };
  const msg = message(reply, seq, String(recorded.body.model ?? 'model'));
  const events = sseEvents(reply, msg);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(events[0]);
  recorded.served = told(msg, false);
  const ping = setInterval(() => res.write('event: ping\ndata: {"type":"ping"}\n\n'), PING_EVERY_MS);
  const done = setTimeout(() => {
    if (!step.reply) return;
    clearInterval(ping);
    for (const e of events.slice(1)) res.write(e);
    recorded.served = told(msg, true);
    res.end();
  }, step.ms);
  res.on('close', () => {
    clearInterval(ping);
    clearTimeout(done);
  });
}

function errorBody(type: string, message: string) {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

function faultStatus(f: Fault): { status: number; type: string; message: string; headers: Record<string, string> } | undefined {
  const retry = (s?: number): Record<string, string> =>
    s === undefined ? {} : { 'retry-after': String(Math.ceil(s)), 'retry-after-ms': String(Math.round(s * 1000)) };
  switch (f.fault) {
    case 'status':
      return { status: f.status, type: f.type ?? 'api_error', message: f.message ?? `injected ${f.status}`, headers: retry(f.retryAfterS) };
    case 'rate_limit':
      return {
        status: 429,
        type: 'rate_limit_error',
        message: 'Number of request tokens has exceeded your per-minute rate limit',
        headers: retry(f.retryAfterS ?? 1),
      };
    case 'overloaded':
      return { status: 529, type: 'overloaded_error', message: 'Overloaded', headers: {} };
    case 'server_error':
      return { status: f.status ?? 500, type: 'api_error', message: 'Internal server error', headers: {} };
    case 'spend_limit':
      // the shape the real API uses: a 429 whose message names the workspace's spend limit
      return {
        status: 429,
        type: 'rate_limit_error',
        message: 'enforced_spend_limit_reached: this workspace has reached its monthly spend limit',
        headers: retry(60),
      };
    default:
      return undefined;
  }
}

function message(reply: FaultReply, seq: number, model: string): Anthropic.Message {
  let n = 0;
  const content = reply.content.map((b) =>
    b.type === 'text'
      ? { type: 'text', text: b.text, citations: null }
      : { type: 'tool_use', id: b.id ?? `toolu_fault_${seq}_${n++}`, name: b.name, input: b.input },
  );
  const calls = reply.content.some((b) => b.type === 'tool_use');
  return {
    id: `msg_fault_${seq}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.stop_reason ?? (calls ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: {
      input_tokens: reply.usage?.input_tokens ?? 100,
      output_tokens: reply.usage?.output_tokens ?? 20,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  } as unknown as Anthropic.Message;
}

/** The Messages API's event stream for one reply; a tool_use with rawInput streams that text as its input. */
function sseEvents(reply: FaultReply, msg: Anthropic.Message): string[] {
  const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`;
  const out = [ev('message_start', { message: { ...msg, content: [], stop_reason: null, usage: { ...msg.usage, output_tokens: 1 } } })];
  msg.content.forEach((block, index) => {
    const src = reply.content[index]!;
    if (block.type === 'text') {
      out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }));
      out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } }));
    } else if (block.type === 'tool_use') {
      out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      const json = src.type === 'tool_use' && src.rawInput !== undefined ? src.rawInput : JSON.stringify(block.input);
      if (json) out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json } }));
    }
    out.push(ev('content_block_stop', { index }));
  });
  out.push(ev('message_delta', { delta: { stop_reason: msg.stop_reason, stop_sequence: null }, usage: { output_tokens: msg.usage.output_tokens } }));
  out.push(ev('message_stop', {}));
  return out;
}

/** Which API the server plays: Anthropic's Messages API, OpenAI's Chat Completions, or OpenAI's Responses API. */
export type FaultWire = 'anthropic' | 'openai' | 'openai-responses';

/** The same faults in OpenAI's shapes: its error bodies, its 503 for overload, its chunks or events (`render`) and keep-alives. */
function answerOpenAI(res: http.ServerResponse, step: FaultStep, seq: number, recorded: RecordedRequest, render: typeof openAIChunks): void {
  const model = String(recorded.body.model ?? 'model');
  const sse = () => res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (!isFault(step)) {
    const s = render(step, seq, model);
    sse();
    recorded.served = s.told;
    return void res.end([...s.body, s.usage, s.done].join(''));
  }
  const failure = faultStatus(step.fault === 'overloaded' ? { fault: 'status', status: 503, message: 'The server is overloaded' } : step);
  if (failure) {
    const message = step.fault === 'spend_limit' ? 'You exceeded your current quota, please check your plan and billing details.' : failure.message;
    res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers });
    return void res.end(openAIErrorBody(failure.status, step.fault === 'spend_limit' ? 'spend_limit' : failure.type, message));
  }
  if (step.fault === 'hang') return;
  if (step.fault === 'malformed') {
    sse();
    return void res.end('data: {"id":"chatcmpl-broken",oops\n\n');
  }
  const reply = (step.fault === 'slow' || step.fault === 'unreadable' || step.fault === 'held' ? step.reply : undefined) ?? {
    content: [{ type: 'text', text: 'a reply that never arrives whole' }],
  };
  const s = render(reply, seq, model);
  sse();
  // a stall sends the start of the stream; unreadable and held the whole reply but its usage (OpenAI tells it last)
  if (step.fault === 'stall') return void res.write(s.body[0]);
  if (step.fault === 'unreadable') return void res.end([...s.body, 'data: {"id":oops\n\n'].join(''));
  const pinging = (first: string[]) => {
    for (const c of first) res.write(c);
    const ping = setInterval(() => res.write(OPENAI_PING), PING_EVERY_MS);
    res.on('close', () => clearInterval(ping));
    return ping;
  };
  if (step.fault === 'held') return void pinging(s.body);
  if (step.fault !== 'slow') return;
  const ping = pinging(s.body.slice(0, 1));
  const done = setTimeout(() => {
    if (!step.reply) return;
    clearInterval(ping);
    recorded.served = s.told;
    res.end([...s.body.slice(1), s.usage, s.done].join(''));
  }, step.ms);
  res.on('close', () => clearTimeout(done));
}

export async function startFaultServer(opts: { port?: number; wire?: FaultWire } = {}): Promise<FaultServer> {
  const queue: FaultPlan[] = [];
  let fallback: FaultStep | undefined;
  const requests: RecordedRequest[] = [];
  const open = new Set<http.ServerResponse>();
  let seq = 0;

  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => void answer(text));
    const answer = async (text: string) => {
      let body: RecordedRequest['body'] = {};
      try {
        body = JSON.parse(text) as RecordedRequest['body'];
      } catch {
        /* recorded as empty; the step decides the answer */
      }
      const recorded: RecordedRequest = { at: Date.now(), headers: req.headers, body, answer: 'empty' };
      requests.push(recorded);
      const plan = queue.shift() ?? fallback;
      let step: FaultStep | undefined;
      try {
        step = typeof plan === 'function' ? await plan(recorded) : plan;
      } catch (err) {
        step = { fault: 'status', status: 500, message: `the test's step failed: ${String(err)}` };
      }
      recorded.answer = !step ? 'empty' : isFault(step) ? step.fault : 'reply';
      open.add(res);
      res.on('close', () => open.delete(res));
      if (step && opts.wire && opts.wire !== 'anthropic')
        return answerOpenAI(res, step, ++seq, recorded, opts.wire === 'openai' ? openAIChunks : responsesEvents);
      if (!step) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return res.end(errorBody('api_error', 'the fault server had no answer queued for this request'));
      }
      if (isFault(step)) {
        const failure = faultStatus(step);
        if (failure) {
          res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers });
          return res.end(errorBody(failure.type, failure.message));
        }
        if (step.fault === 'hang') return; // the socket stays open until the client gives up or the server closes
        if (step.fault === 'slow') return slowly(res, step, ++seq, recorded);
        if (step.fault === 'stall') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const start = message({ content: [{ type: 'text', text: 'thinking' }] }, ++seq, String(body.model ?? 'model'));
          recorded.served = told(start, false);
          return void res.write(sseEvents({ content: [] }, { ...start, content: [] })[0]);
        }
        if (step.fault === 'unreadable' || step.fault === 'held') {
          const reply = step.reply ?? { content: [{ type: 'text', text: 'a reply that never arrives whole' }] };
          const msg = message(reply, ++seq, String(body.model ?? 'model'));
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // every event up to message_delta: the reply's usage is final, and billed
          for (const e of sseEvents(reply, msg).slice(0, -1)) res.write(e);
          recorded.served = told(msg, true);
          if (step.fault === 'unreadable') return res.end('event: message_stop\ndata: {"type":"message_stop",oops\n\n');
          const ping = setInterval(() => res.write('event: ping\ndata: {"type":"ping"}\n\n'), PING_EVERY_MS);
          return void res.on('close', () => clearInterval(ping));
        }
        res.writeHead(200, { 'content-type': body.stream ? 'text/event-stream' : 'application/json' });
        return res.end(body.stream ? 'event: message_start\ndata: {"type":"message_start","message":{oops\n\n' : '{"id":"msg_broken","content":[');
      }
      const msg = message(step, ++seq, String(body.model ?? 'model'));
      recorded.served = told(msg, true);
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(msg));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of sseEvents(step, msg)) res.write(e);
      res.end();
    };
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    push: (...steps) => void queue.push(...steps),
    setDefault: (step) => void (fallback = step),
    requests,
    clear: () => void queue.splice(0),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
