import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient, type ModelClient } from '../../../src/model/index.js';
import { duplicateIdsReply, maxTokensCutReply, startFaultServer, type FaultServer } from '../../../src/model/fault-server.js';
import { failure, firstRequest } from './helpers.js';

// The production client (streaming, stall guard, error mapping) against the fault server.
let server: FaultServer;
let client: ModelClient;
const STALL = { firstByteMs: 400, idleMs: 400 };

beforeAll(async () => {
  server = await startFaultServer();
  client = await createModelClient({
    spec: 'claude-sonnet-4-6',
    runId: 'r',
    env: { ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: server.url },
    stall: STALL,
  });
});
afterAll(() => server.close());

const call = (turn = 1, idempotencyKey?: string) => client.create(firstRequest(), { turn, idempotencyKey });

describe('the production model client against injected faults', () => {
  it('answers a streamed reply and sends the idempotency key of the call', async () => {
    server.push({ content: [{ type: 'text', text: 'hello' }] });
    const res = await call(3, 'run-1:1:3');
    expect(res.content).toMatchObject([{ type: 'text', text: 'hello' }]);
    expect(server.requests.at(-1)!.headers['idempotency-key']).toBe('run-1:1:3');
    expect(server.requests.at(-1)!.body.stream).toBe(true);
  });

  it('makes the spend-limit 429 non-retryable, and keeps an ordinary 429 retryable with its retry-after', async () => {
    server.push({ fault: 'spend_limit' });
    const quota = await failure(call());
    expect(quota).toMatchObject({ kind: 'quota', retryable: false, status: 429 });
    expect(quota.message).toContain('spend limit');

    server.push({ fault: 'rate_limit', retryAfterS: 7 });
    expect(await failure(call())).toMatchObject({ kind: 'rate_limit', retryable: true, retryAfterMs: 7000 });
  });

  it.each([
    [{ fault: 'overloaded' } as const, 'overloaded'],
    [{ fault: 'server_error', status: 502 } as const, 'server'],
    [{ fault: 'malformed' } as const, 'server'],
  ])('makes %o a retryable %s error', async (fault, kind) => {
    server.push(fault);
    expect(await failure(call())).toMatchObject({ kind, retryable: true });
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

  it('passes a max_tokens cut and duplicate ids through as the API sent them (the agent refuses them)', async () => {
    server.push(maxTokensCutReply('create_file', { path: 'a.txt', content: 'hello world' }, 30));
    const cut = await call();
    expect(cut.stopReason).toBe('max_tokens');
    expect(cut.content[0]).toMatchObject({ type: 'tool_use', name: 'create_file' });

    server.push(duplicateIdsReply({ name: 'read_file', input: { path: 'a' } }, { name: 'read_file', input: { path: 'b' } }));
    const dup = await call();
    expect(dup.content.map((b) => (b.type === 'tool_use' ? b.id : ''))).toEqual(['toolu_dup', 'toolu_dup']);
  });
});
