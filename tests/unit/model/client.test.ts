import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import { buildMessageParams, costUsd, createModelClient, type MessageParams } from '../../../src/model/index.js';
import { streamedMessage } from '../../../src/model/fault-server.js';
import { firstRequest, nextRequest, failure } from './helpers.js';

interface Captured {
  headers: http.IncomingHttpHeaders;
  body: MessageParams;
}

/** A stand-in for api.anthropic.com: records requests and answers with whatever the test queued. */
const captured: Captured[] = [];
const replies: Array<{ status: number; body: unknown; headers?: Record<string, string> }> = [];
let server: http.Server;
let baseURL: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      captured.push({ headers: req.headers, body: JSON.parse(text) });
      const reply = replies.shift() ?? { status: 500, body: { type: 'error', error: { type: 'api_error', message: 'no reply queued' } } };
      // real models are called streaming (the stall guard needs the first byte early)
      if (reply.status === 200 && captured.at(-1)!.body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', ...reply.headers });
        return res.end(streamedMessage(reply.body as Anthropic.Message));
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const apiMessage = (model: string): Anthropic.Message =>
  ({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: 'hello', citations: null }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 34, cache_read_input_tokens: 5000, cache_creation_input_tokens: 600 },
  }) as Anthropic.Message;

const apiError = (status: number, type: string, headers?: Record<string, string>) => ({
  status,
  body: { type: 'error', error: { type, message: `${type} from the test API` } },
  ...(headers ? { headers } : {}),
});

const env = () => ({ ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: baseURL });

function breakpoints(body: MessageParams): number {
  return (JSON.stringify(body).match(/"cache_control"/g) ?? []).length;
}

describe('createModelClient against the Messages API', () => {
  it('refuses a real model without ANTHROPIC_API_KEY, before any request', async () => {
    const before = captured.length;
    const err = await failure(createModelClient({ spec: 'claude-sonnet-5-5', runId: 'r', env: { ANTHROPIC_BASE_URL: baseURL } }));
    expect(err).toMatchObject({ kind: 'auth', retryable: false });
    expect(err.message).toContain('set ANTHROPIC_API_KEY');
    expect(err.message).toContain('--model scripted:FILE');
    expect(captured.length).toBe(before);
  });

  it('sends the key and prices the answer by model', async () => {
    const client = await createModelClient({ spec: 'claude-sonnet-4-6', runId: 'r', env: env() });
    expect(client).toMatchObject({ scripted: false, model: 'claude-sonnet-4-6' });
    replies.push({ status: 200, body: apiMessage('claude-sonnet-4-6') });
    const result = await client.create({ ...firstRequest(), temperature: 0.2 }, { turn: 1 });

    const sent = captured.at(-1)!;
    // SDK 1.x sends the API key as a bearer token
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(sent.headers['x-kiln-script']).toBeUndefined();
    expect(sent.body.model).toBe('claude-sonnet-4-6');
    expect(sent.body.temperature).toBe(0.2);
    expect(result.usage).toEqual({ input: 12, output: 34, cacheRead: 5000, cacheWrite: 600 });
    expect(result.costUsd).toBeCloseTo(costUsd('claude-sonnet-4-6', result.usage));
    expect(result.content).toMatchObject([{ type: 'text', text: 'hello' }]);
  });

  it('leaves temperature out for models that reject it', async () => {
    const client = await createModelClient({ spec: 'claude-sonnet-5-5', runId: 'r', env: env() });
    replies.push({ status: 200, body: apiMessage('claude-sonnet-5-5') });
    await client.create({ ...firstRequest(), temperature: 0.2 }, { turn: 1 });
    expect(captured.at(-1)!.body).not.toHaveProperty('temperature');
  });

  it.each([
    [404, 'not_found_error', 'not_found'],
    [400, 'invalid_request_error', 'bad_request'],
    [403, 'permission_error', 'permission'],
  ] as const)('maps %i to a non-retryable %s', async (status, type, kind) => {
    const client = await createModelClient({ spec: 'claude-sonnet-5-5', runId: 'r', env: env() });
    replies.push(apiError(status, type));
    const err = await failure(client.create(firstRequest(), { turn: 1 }));
    expect(err).toMatchObject({ kind, retryable: false, status });
    expect(err.message).toContain(`${type} from the test API`);
    expect(captured.at(-1)).toBeDefined();
  });

  it('honours retry-after given as a date, and x-should-retry', async () => {
    const client = await createModelClient({ spec: 'claude-sonnet-5-5', runId: 'r', env: env() });
    replies.push(apiError(503, 'api_error', { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }));
    const err = await failure(client.create(firstRequest(), { turn: 1 }));
    expect(err).toMatchObject({ kind: 'server', retryable: true, status: 503 });
    expect(err.retryAfterMs).toBeGreaterThan(25_000);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);

    replies.push(apiError(500, 'api_error', { 'x-should-retry': 'false' }));
    expect(await failure(client.create(firstRequest(), { turn: 1 }))).toMatchObject({ kind: 'server', retryable: false });
  });

  it('makes an unreachable API a retryable connection error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const client = await createModelClient({
      spec: 'claude-sonnet-5-5',
      runId: 'r',
      env: { ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` },
    });
    expect(await failure(client.create(firstRequest(), { turn: 1 }))).toMatchObject({ kind: 'connection', retryable: true });
  });
});

describe('buildMessageParams', () => {
  it('puts breakpoints on the system prompt, the last tool and the last user block, four at most', () => {
    const first = firstRequest();
    const reply: Anthropic.ContentBlock[] = [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' }, caller: { type: 'direct' } }];
    const second = nextRequest(first, reply, 'contents of a');
    const params = buildMessageParams('claude-sonnet-5-5', second);

    const system = params.system as Anthropic.TextBlockParam[];
    expect(system.map((b) => b.text)).toEqual([first.system, first.rules]);
    expect(system[0]?.cache_control).toBeUndefined();
    expect(system[1]?.cache_control).toEqual({ type: 'ephemeral' });
    expect(params.tools?.map((t) => 'cache_control' in t && t.cache_control != null)).toEqual([false, false, true]);
    const last = params.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect((last.content as Anthropic.ToolResultBlockParam[])[0]?.cache_control).toEqual({ type: 'ephemeral' });
    // the first user message no longer carries the moving breakpoint
    expect(breakpoints(params)).toBe(3);
  });

  it("drops breakpoints the caller left in older messages and does not touch the caller's messages", () => {
    const req = firstRequest();
    req.messages = [
      { role: 'user', content: [{ type: 'text', text: 'old', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'ok', cache_control: { type: 'ephemeral' } }] },
      { role: 'user', content: 'now this' },
    ];
    const snapshot = JSON.stringify(req.messages);
    const params = buildMessageParams('claude-sonnet-5-5', req);
    expect(breakpoints(params)).toBe(3);
    expect(params.messages.at(-1)!.content).toEqual([{ type: 'text', text: 'now this', cache_control: { type: 'ephemeral' } }]);
    expect(JSON.stringify(req.messages)).toBe(snapshot);
  });
});
