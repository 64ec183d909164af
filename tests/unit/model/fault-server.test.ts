import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import { createModelClient, type BilledReply, type ModelClient } from '../../../src/model/index.js';
import { duplicateIdsReply, maxTokensCutReply, startFaultServer, type FaultServer, type FaultWire } from '../../../src/model/fault-server.js';
import { UNPARSED_INPUT } from '../../../src/shared/unparsed-input.js';
import { parseToolInput } from '../../../src/tools/schemas.js';
import { failure, firstRequest, nextRequest } from './helpers.js';

// The production clients (streaming, stall guard, error mapping) against the fault server, once per wire format.
const STALL = { firstByteMs: 400, idleMs: 400 };
const WIRES: Array<{ wire: FaultWire; spec: (url: string) => string; env: (url: string) => NodeJS.ProcessEnv }> = [
  { wire: 'anthropic', spec: () => 'claude-sonnet-4-6', env: (url) => ({ ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: url }) },
  // OpenAI itself: the Responses API
  { wire: 'openai-responses', spec: () => 'openai:gpt-4.1', env: (url) => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: url }) },
  // a server that copies OpenAI: Chat Completions
  { wire: 'openai', spec: (url) => `openai-compatible@${url}:qwen3-coder`, env: (url) => ({ KILN_OPENAI_COMPATIBLE_URLS: url }) },
];

describe.each(WIRES)('the production model client against injected faults, $wire wire format', ({ wire, spec, env }) => {
  let server: FaultServer;
  let client: ModelClient;
  beforeAll(async () => {
    server = await startFaultServer({ wire });
    client = await createModelClient({ spec: spec(server.url), runId: 'r', env: env(server.url), stall: STALL });
  });
  afterAll(() => server.close());

  const call = (turn = 1, idempotencyKey?: string, onBilled?: (b: BilledReply) => Promise<void>) =>
    client.create(firstRequest(), { turn, idempotencyKey, ...(onBilled ? { onBilled } : {}) });
  const uses = (content: Anthropic.ContentBlock[]) => content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');

  it('answers a streamed reply, sends the idempotency key of the call, and bills what the API told', async () => {
    server.push({ content: [{ type: 'text', text: 'hello' }], usage: { input_tokens: 1000, output_tokens: 50 } });
    const billed: BilledReply[] = [];
    const res = await call(3, 'run-1:1:3', async (b) => void billed.push(b));
    expect(res.content).toMatchObject([{ type: 'text', text: 'hello' }]);
    expect(res.stopReason).toBe('end_turn');
    expect(res.usage).toMatchObject({ input: 1000, output: 50 });
    // a server of one's own costs nothing Kiln can know
    if (wire === 'openai') expect(res.costUsd).toBe(0);
    else expect(res.costUsd).toBeGreaterThan(0);
    expect(billed.at(-1)).toMatchObject({ usage: { input: 1000, output: 50 }, costUsd: res.costUsd });
    expect(server.requests.at(-1)!.headers['idempotency-key']).toBe('run-1:1:3');
    expect(server.requests.at(-1)!.body.stream).toBe(true);
    // the wire format the provider spoke
    expect(Object.keys(server.requests.at(-1)!.body)).toContain(wire === 'openai-responses' ? 'input' : 'messages');
  });

  it('makes the spend-limit 429 non-retryable, and keeps an ordinary 429 retryable with its retry-after', async () => {
    server.push({ fault: 'spend_limit' });
    const quota = await failure(call());
    expect(quota).toMatchObject({ kind: 'quota', retryable: false, status: 429 });

    server.push({ fault: 'rate_limit', retryAfterS: 7 });
    expect(await failure(call())).toMatchObject({ kind: 'rate_limit', retryable: true, retryAfterMs: 7000 });
  });

  it.each([
    [{ fault: 'overloaded' } as const, 'overloaded'],
    [{ fault: 'server_error', status: 502 } as const, 'server'],
    [{ fault: 'malformed' } as const, 'server'],
    [{ fault: 'unreadable' } as const, 'server'],
  ])('makes %o a retryable %s error', async (fault, kind) => {
    server.push(fault);
    expect(await failure(call())).toMatchObject({ kind, retryable: true });
  });

  it.each([
    [400, 'bad_request'],
    [401, 'auth'],
    [403, 'permission'],
    [404, 'not_found'],
  ] as const)('makes a %i a non-retryable %s error', async (status, kind) => {
    server.push({ fault: 'status', status, message: `injected ${status}` });
    const err = await failure(call());
    expect(err).toMatchObject({ kind, retryable: false, status });
    expect(err.message).toContain(`injected ${status}`);
  });

  it('gives up on a hang before the first byte, and on a stream that stalls, within the set limits', async () => {
    server.push({ fault: 'hang' });
    let t = Date.now();
    const hang = await failure(call());
    expect(hang).toMatchObject({ kind: 'timeout', retryable: true });
    expect(hang.message).toContain('no response from the model API within 400 ms');
    expect(Date.now() - t).toBeLessThan(3000);

    server.push({ fault: 'stall' });
    t = Date.now();
    const stall = await failure(call());
    expect(stall).toMatchObject({ kind: 'timeout', retryable: true });
    expect(stall.message).toContain('stalled');
    expect(Date.now() - t).toBeLessThan(3000);
  });

  it('keeps a slow model that sends keep-alives (every 400 ms) past the idle limit', async () => {
    const patient = await createModelClient({ spec: spec(server.url), runId: 'r', env: env(server.url), stall: { firstByteMs: 400, idleMs: 1000 } });
    server.push({ fault: 'slow', ms: 2500, reply: { content: [{ type: 'text', text: 'thought about it' }] } });
    expect((await patient.create(firstRequest(), { turn: 1 })).content).toMatchObject([{ type: 'text', text: 'thought about it' }]);
  });

  it('passes a max_tokens cut and duplicate ids through as the API sent them (the agent refuses them)', async () => {
    server.push(maxTokensCutReply('create_file', { path: 'a.txt', content: 'hello world' }, 30));
    const cut = await call();
    expect(cut.stopReason).toBe('max_tokens');
    expect(cut.content[0]).toMatchObject({ type: 'tool_use', name: 'create_file' });

    server.push(duplicateIdsReply({ name: 'read_file', input: { path: 'a' } }, { name: 'read_file', input: { path: 'b' } }));
    const dup = await call();
    expect(uses(dup.content).map((b) => b.id)).toEqual(['toolu_dup', 'toolu_dup']);
  });

  it('keeps a call whose arguments are not JSON, raw, so the turn answers it with an error naming it', async () => {
    server.push({ content: [{ type: 'tool_use', name: 'read_file', input: {}, rawInput: '{"path": a.txt}' }] });
    const res = await call();
    const [use] = uses(res.content);
    expect(use!.input).toEqual({ [UNPARSED_INPUT]: '{"path": a.txt}' });
    const parsed = parseToolInput(use!.name, use!.input);
    expect(parsed).toMatchObject({ ok: false, error: expect.stringMatching(/read_file call is not valid JSON/) });
    // and the next request carries the call back as the model sent it, with its error result
    server.push({ content: [{ type: 'text', text: 'ok' }] });
    await client.create(nextRequest(firstRequest(), res.content, 'not valid JSON', true), { turn: 2 });
    expect(JSON.stringify(server.requests.at(-1)!.body)).toContain(wire === 'anthropic' ? '"kiln_unparsed_input"' : '{\\"path\\": a.txt}');
  });
});

describe('tool-call quirks of OpenAI-compatible servers', () => {
  let server: FaultServer;
  let client: ModelClient;
  beforeAll(async () => {
    server = await startFaultServer({ wire: 'openai' });
    const url = `${server.url}/v1`;
    client = await createModelClient({ spec: `openai-compatible@${url}:qwen3-coder`, runId: 'r', env: { KILN_OPENAI_COMPATIBLE_URLS: url }, stall: STALL });
  });
  afterAll(() => server.close());
  const uses = (content: Anthropic.ContentBlock[]) => content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');

  it('gives a call with no id one of its own, so its result can name it; the next request carries it back', async () => {
    server.push({ content: [{ type: 'tool_use', id: null, name: 'read_file', input: { path: 'a.txt' } }] });
    const res = await client.create(firstRequest(), { turn: 1 });
    const [use] = uses(res.content);
    expect(use).toMatchObject({ name: 'read_file', input: { path: 'a.txt' } });
    expect(use!.id).toMatch(/^call_kiln_[0-9a-f]{12}$/);
    server.push({ content: [{ type: 'text', text: 'ok' }] });
    await client.create(nextRequest(firstRequest(), res.content, 'hello'), { turn: 2 });
    const sent = server.requests.at(-1)!.body.messages as unknown as Array<{ role: string; tool_call_id?: string; tool_calls?: Array<{ id: string }> }>;
    expect(sent.find((m) => m.role === 'assistant')!.tool_calls![0]!.id).toBe(use!.id);
    expect(sent.find((m) => m.role === 'tool')!.tool_call_id).toBe(use!.id);
  });

  it('keeps parallel calls apart, whether at their own indexes or all at index 0', async () => {
    const a = { type: 'tool_use' as const, name: 'read_file', input: { path: 'a' } };
    const b = { type: 'tool_use' as const, name: 'read_file', input: { path: 'b' } };
    server.push(
      { content: [a, b] },
      {
        content: [
          { ...a, id: 'c1', index: 0 },
          { ...b, id: 'c2', index: 0 },
        ],
      },
    );
    for (const _ of [1, 2]) {
      const res = await client.create(firstRequest(), { turn: 1 });
      expect(uses(res.content).map((u) => u.input)).toEqual([{ path: 'a' }, { path: 'b' }]);
      expect(new Set(uses(res.content).map((u) => u.id)).size).toBe(2);
      expect(res.stopReason).toBe('tool_use');
    }
  });

  it('keeps a call whose arguments are a JSON string that does not parse, and the tool layer answers it with an error naming it', async () => {
    server.push({ content: [{ type: 'tool_use', name: 'create_file', input: {}, rawInput: '{"path":"b.txt","content":"unterminated' }] });
    const res = await client.create(firstRequest(), { turn: 1 });
    const [use] = uses(res.content);
    expect(res.stopReason).toBe('tool_use');
    expect(parseToolInput(use!.name, use!.input)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/create_file call is not valid JSON: .*unterminated/),
    });
  });

  it('gives a call with no name a name the tool layer answers as unknown, naming the tools there are', async () => {
    server.push({ content: [{ type: 'tool_use', name: '', input: { path: 'a' } }] });
    const [use] = uses((await client.create(firstRequest(), { turn: 1 })).content);
    expect(parseToolInput(use!.name, use!.input)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/Unknown tool "unnamed_tool"\. Available tools: read_file/),
    });
  });

  it('sends max_tokens (not max_completion_tokens), no key of the worker, and costs nothing in USD', async () => {
    server.push({ content: [{ type: 'text', text: 'hi' }] });
    const res = await client.create(firstRequest(), { turn: 1 });
    const req = server.requests.at(-1)!;
    expect(req.body).toMatchObject({ model: 'qwen3-coder', max_tokens: 4096 });
    expect(req.body.max_completion_tokens).toBeUndefined();
    expect(req.headers.authorization).toBe('Bearer kiln-no-key');
    expect(res.costUsd).toBe(0);
    expect(client.model).toBe(`openai-compatible@${server.url}/v1:qwen3-coder`);
  });

  it('refuses a server the worker was not told it may call, before any request', async () => {
    const before = server.requests.length;
    const err = await failure(
      createModelClient({ spec: 'openai-compatible@http://169.254.169.254:80:m', runId: 'r', env: { KILN_OPENAI_COMPATIBLE_URLS: `${server.url}/v1` } }),
    );
    expect(err).toMatchObject({ kind: 'permission', retryable: false });
    expect(err.message).toContain('KILN_OPENAI_COMPATIBLE_URLS');
    expect(server.requests.length).toBe(before);
  });
});
