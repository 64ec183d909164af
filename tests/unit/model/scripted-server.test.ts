import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import { closeSharedScriptedServer, createModelClient, ModelError, sharedScriptedServer, type ModelClient } from '../../../src/model/index.js';
import { firstRequest, nextRequest, scriptFile, failure } from './helpers.js';

afterAll(() => closeSharedScriptedServer());

const FIX_SCRIPT = {
  name: 'fix revoked session',
  steps: [
    { text: "I'll look at the session code.", tool_use: [{ name: 'read_file', input: { path: 'src/session.js' } }] },
    {
      expect: { tool_result_contains: 'revokedAt' },
      tool_use: [
        { name: 'edit', input: { path: 'src/session.js', old: 'a', new: 'b' } },
        { name: 'run_command', input: { command: 'npm test' } },
      ],
    },
    { expect: { tool_result_is_error: false }, text: 'Done.', stop_reason: 'end_turn' },
  ],
};

type Wire = 'anthropic' | 'openai';

async function clientOn(script: unknown, runId: string, scriptedWire: Wire = 'anthropic'): Promise<ModelClient> {
  return createModelClient({ spec: `scripted:${await scriptFile(script)}`, runId, scriptedWire });
}

function toolUses(content: Anthropic.ContentBlock[]): Anthropic.ToolUseBlock[] {
  return content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
}

// the same scripts, over the Messages API and over Chat Completions through the OpenAI provider
describe.each(['anthropic', 'openai'] as const)('scripted server through the real SDK, %s wire format', (wire) => {
  const client = (script: unknown, runId: string) => clientOn(script, `${wire}-${runId}`, wire);
  it('answers a run turn by turn with Anthropic messages', async () => {
    const model = await client(FIX_SCRIPT, 'run-order');
    expect(model.scripted).toBe(true);
    const req1 = firstRequest();
    const r1 = await model.create(req1, { turn: 1 });
    expect(r1.model).toBe('scripted');
    expect(r1.stopReason).toBe('tool_use');
    expect(r1.content[0]).toMatchObject({ type: 'text', text: "I'll look at the session code." });
    expect(toolUses(r1.content)).toMatchObject([{ name: 'read_file', input: { path: 'src/session.js' } }]);

    const req2 = nextRequest(req1, r1.content, 'if (s.revokedAt) return null;');
    const r2 = await model.create(req2, { turn: 2 });
    expect(toolUses(r2.content).map((t) => t.name)).toEqual(['edit', 'run_command']);
    const ids = toolUses(r2.content).map((t) => t.id);
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) expect(id).toMatch(/^toolu_[0-9a-f]{24}$/);

    const r3 = await model.create(nextRequest(req2, r2.content, 'ok'), { turn: 3 });
    expect(r3.stopReason).toBe('end_turn');
    expect(r3.content).toMatchObject([{ type: 'text', text: 'Done.' }]);
    expect(r3.costUsd).toBeGreaterThan(0);
  });

  it('gives a repeated turn the same tool ids, and another run different ones', async () => {
    const file = await scriptFile(FIX_SCRIPT);
    const a = await createModelClient({ spec: `scripted:${file}`, runId: 'run-a' });
    const b = await createModelClient({ spec: `scripted:${file}`, runId: 'run-b' });
    const first = toolUses((await a.create(firstRequest(), { turn: 1 })).content)[0]?.id;
    const again = toolUses((await a.create(firstRequest(), { turn: 1 })).content)[0]?.id;
    const other = toolUses((await b.create(firstRequest(), { turn: 1 })).content)[0]?.id;
    expect(first).toBeDefined();
    expect(again).toBe(first);
    expect(other).not.toBe(first);
  });

  it('keeps concurrent runs with different scripts apart', async () => {
    const scripts = ['alpha', 'beta', 'gamma'].map((who) => ({
      name: who,
      steps: [1, 2, 3].map((n) => ({ text: `${who} turn ${n}`, tool_use: [{ name: 'read_file', input: { path: `${who}.txt` } }] })),
    }));
    const clients = await Promise.all(scripts.map((s, i) => client(s, `concurrent-${i}`)));
    // Interleave: every run's turn 3, 1 and 2 all in flight at once.
    const calls = clients.flatMap((c, i) => [3, 1, 2].map(async (turn) => ({ i, turn, result: await c.create(firstRequest(), { turn }) })));
    const results = await Promise.all(calls);
    for (const { i, turn, result } of results) {
      const who = scripts[i]?.name;
      expect(result.content[0]).toMatchObject({ type: 'text', text: `${who} turn ${turn}` });
      expect(toolUses(result.content)[0]?.input).toEqual({ path: `${who}.txt` });
    }
  });

  it('expands repeat and fills in {{turn}}', async () => {
    const model = await client(
      { steps: [{ text: 'step {{turn}}', tool_use: [{ name: 'read_file', input: { path: 'f{{turn}}.txt' } }], repeat: 100 }, { text: 'end' }] },
      'repeat',
    );
    const r57 = await model.create(firstRequest(), { turn: 57 });
    expect(r57.content[0]).toMatchObject({ text: 'step 57' });
    expect(toolUses(r57.content)[0]?.input).toEqual({ path: 'f57.txt' });
    expect((await model.create(firstRequest(), { turn: 101 })).content).toMatchObject([{ text: 'end' }]);
  });

  it('returns a 429 with retry-after as a retryable rate limit, then answers the same turn', async () => {
    const model = await client({ steps: [{ error: { status: 429, retry_after_s: 1, times: 1 }, text: 'after the limit' }] }, 'rate-limit');
    const err = await failure(model.create(firstRequest(), { turn: 1 }));
    expect(err).toMatchObject({ kind: 'rate_limit', retryable: true, retryAfterMs: 1000, status: 429 });
    const ok = await model.create(firstRequest(), { turn: 1 });
    expect(ok.content).toMatchObject([{ text: 'after the limit' }]);
  });

  it('fails every time with a permanent 401, as a non-retryable auth error', async () => {
    const model = await client({ steps: [{ error: { status: 401, times: 'always' } }] }, 'auth');
    for (let i = 0; i < 3; i++) {
      const err = await failure(model.create(firstRequest(), { turn: 1 }));
      expect(err).toMatchObject({ kind: 'auth', retryable: false, status: 401 });
    }
  });

  it('maps 529 to a retryable overload and 500 to a retryable server error', async () => {
    const model = await client(
      {
        steps: [
          { error: { status: 529, times: 2 }, text: 'a' },
          { error: { status: 500 }, text: 'b' },
        ],
      },
      'overload',
    );
    expect(await failure(model.create(firstRequest(), { turn: 1 }))).toMatchObject({ kind: 'overloaded', retryable: true });
    expect(await failure(model.create(firstRequest(), { turn: 1 }))).toMatchObject({ kind: 'overloaded', retryable: true });
    expect((await model.create(firstRequest(), { turn: 1 })).content).toMatchObject([{ text: 'a' }]);
    expect(await failure(model.create(firstRequest(), { turn: 2 }))).toMatchObject({ kind: 'server', retryable: true, status: 500 });
  });

  it('counts injected errors per run, so a second run meets them afresh', async () => {
    const file = await scriptFile({ steps: [{ error: { status: 429 }, text: 'ok' }] });
    for (const runId of ['count-1', 'count-2']) {
      const model = await createModelClient({ spec: `scripted:${file}`, runId: `${wire}-${runId}`, scriptedWire: wire });
      expect(await failure(model.create(firstRequest(), { turn: 1 }))).toMatchObject({ kind: 'rate_limit' });
      expect((await model.create(firstRequest(), { turn: 1 })).content).toMatchObject([{ text: 'ok' }]);
    }
  });

  it('reports an unmet expectation as a script error naming the step and what it got', async () => {
    const model = await client(FIX_SCRIPT, 'mismatch');
    const r1 = await model.create(firstRequest(), { turn: 1 });
    const err = await failure(model.create(nextRequest(firstRequest(), r1.content, 'function load() { return s; }'), { turn: 2 }));
    expect(err.kind).toBe('script');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('script fix revoked session step 2');
    expect(err.message).toContain('expected a tool result containing "revokedAt"');
    expect(err.message).toContain('function load() { return s; }');
  });

  it('checks is_error, the user message and the system prompt', async () => {
    const model = await client(
      {
        name: 'checks',
        steps: [
          { expect: { system_contains: 'Kiln', user_contains: 'revoked' }, tool_use: [{ name: 'run_command', input: {} }] },
          { expect: { tool_result_is_error: true }, text: 'the tests fail, as expected' },
        ],
      },
      'checks',
    );
    const r1 = await model.create(firstRequest(), { turn: 1 });
    const passing = nextRequest(firstRequest(), r1.content, 'all tests pass', false);
    const err = await failure(model.create(passing, { turn: 2 }));
    expect(err.message).toMatch(/script checks step 2: expected a tool result with is_error true/);
    const failing = nextRequest(firstRequest(), r1.content, '1 failing', true);
    expect((await model.create(failing, { turn: 2 })).content).toMatchObject([{ text: 'the tests fail, as expected' }]);

    const wrongGoal = await failure(model.create(firstRequest('add a feature'), { turn: 1 }));
    expect(wrongGoal.message).toContain('step 1: expected the last user message to contain "revoked", got: "add a feature"');
  });

  it('reports a turn past the end of the script as a script error', async () => {
    const model = await client(FIX_SCRIPT, 'past-end');
    const err = await failure(model.create(firstRequest(), { turn: 4 }));
    expect(err).toMatchObject({ kind: 'script', retryable: false });
    expect(err.message).toContain('script fix revoked session step 4: the script ends after 3 steps');
  });
});

describe('scripted server through the real SDK', () => {
  const client = (script: unknown, runId: string) => clientOn(script, runId);
  it('over Chat Completions, reports the prompt cached by the turn before as cached tokens, priced lower', async () => {
    const model = await clientOn(FIX_SCRIPT, 'cache-openai', 'openai');
    const req1 = firstRequest();
    const r1 = await model.create(req1, { turn: 1 });
    expect(r1.usage).toMatchObject({ cacheRead: 0, cacheWrite: 0 });
    expect(r1.usage.input).toBeGreaterThan(500);
    const r2 = await model.create(nextRequest(req1, r1.content, 'if (s.revokedAt) return null;'), { turn: 2 });
    expect(r2.usage.cacheRead).toBeGreaterThan(4 * r2.usage.input);
    expect(r2.costUsd).toBeLessThan(r1.costUsd);
  });

  it('reports cache writes on the first turn and mostly cache reads on the next', async () => {
    const file = await scriptFile(FIX_SCRIPT);
    const model = await createModelClient({ spec: `scripted:${file}`, runId: 'cache-1' });
    const req1 = firstRequest();
    const r1 = await model.create(req1, { turn: 1 });
    expect(r1.usage.cacheRead).toBe(0);
    expect(r1.usage.cacheWrite).toBeGreaterThan(500);
    expect(r1.usage.input).toBeLessThan(r1.usage.cacheWrite / 10);
    expect(r1.usage.output).toBeGreaterThan(0);

    const r2 = await model.create(nextRequest(req1, r1.content, 'if (s.revokedAt) return null;'), { turn: 2 });
    expect(r2.usage.cacheRead).toBeGreaterThan(0);
    // everything up to turn 1's breakpoint is read; only turn 1's answer and the new result are written
    expect(r2.usage.cacheRead).toBeGreaterThanOrEqual(r1.usage.cacheWrite);
    expect(r2.usage.cacheRead).toBeGreaterThan(4 * (r2.usage.cacheWrite + r2.usage.input));
    // and reading is cheaper than writing the same prompt again
    expect(r2.costUsd).toBeLessThan(r1.costUsd);

    const cold = await createModelClient({ spec: `scripted:${file}`, runId: 'cache-2' });
    const c1 = await cold.create(req1, { turn: 1 });
    expect(c1.usage.cacheRead).toBe(0);
    expect(c1.usage.cacheWrite).toBe(r1.usage.cacheWrite);
  });

  it('copes with script paths and run ids outside ASCII', async () => {
    const file = await scriptFile({ steps: [{ text: 'ça marche' }] }, '会话 script.json');
    const model = await createModelClient({ spec: `scripted:${file}`, runId: 'run → 1' });
    expect((await model.create(firstRequest(), { turn: 1 })).content).toMatchObject([{ text: 'ça marche' }]);
  });

  it('reports a script removed during the run as a script error naming the file', async () => {
    const file = await scriptFile(FIX_SCRIPT);
    const model = await createModelClient({ spec: `scripted:${file}`, runId: 'removed' });
    await rm(file);
    const err = await failure(model.create(firstRequest(), { turn: 1 }));
    expect(err).toMatchObject({ kind: 'script', retryable: false });
    expect(err.message).toBe(`script ${file}: no such file`);
  });

  it('refuses streaming and serves a health check', async () => {
    const server = await sharedScriptedServer();
    const health = await fetch(`${server.url}/health`);
    expect(await health.json()).toEqual({ ok: true, scripted: true });
    const streamed = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'scripted', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(streamed.status).toBe(400);
    expect(JSON.stringify(await streamed.json())).toContain('does not stream');
  });

  it('passes an abort through without turning it into a model error', async () => {
    const model = await client(FIX_SCRIPT, 'abort');
    const controller = new AbortController();
    controller.abort();
    const err = await model.create(firstRequest(), { turn: 1, signal: controller.signal }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ModelError);
    expect((err as Error).name).toBe('APIUserAbortError');
  });
});
