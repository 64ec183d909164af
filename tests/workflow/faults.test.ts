/**
 * The fault plan on the real dev server: an in-process worker with real activities, sandbox and
 * git, and the fault-injecting Anthropic-compatible server playing the model (the production
 * client path: streaming, stall guard, idempotency keys, error mapping).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient } from '../../src/model/index.js';
import {
  duplicateIdsReply,
  maxTokensCutReply,
  startFaultServer,
  type FaultReply,
  type FaultServer,
  type RecordedRequest,
} from '../../src/model/fault-server.js';
import { cancelRequestSignal } from '../../src/shared/messages.js';
import type { RunResult } from '../../src/shared/types.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { repoAt, repoWith } from '../helpers/repo.js';
import { fillAllBut, fillUp, freeFill, smallDisk, unmount } from '../helpers/small-disk.js';
import { testInput } from '../helpers/run-input.js';
import { expectCancelledByAlice } from '../helpers/cancelled-run.js';
import { ledger, ledgerTotal, servedTotal } from '../helpers/ledger.js';
import { follow, outcome } from '../../src/client/runs.js';
import { RUN_NOT_ACHIEVED } from '../../src/shared/constants.js';
import { statusQuery } from '../../src/shared/messages.js';
import type { CrashPoint } from '../../src/testing-hooks.js';
import { diskWait, diskWaitLine, type DiskWait } from '../../src/client/disk-wait.js';
import { formatStatus } from '../../src/cli/actions/status.js';

let t: WorkflowTestEnv;
/** a second worker on t's server whose turn activity takes one turn each (KILN_TURNS_AHEAD_MS=0) */
let oneTurn: WorkflowTestEnv;
/** a worker like t for the runs that name an OpenAI model (the OpenAI provider's path) */
let chat: WorkflowTestEnv;
/** the fault server of the wire format under test (the Anthropic one unless a block sets it) */
let api: FaultServer;
let anthropicApi: FaultServer;
/** Chat Completions (an OpenAI-compatible server), and OpenAI's Responses API */
let openaiApi: FaultServer;
let responsesApi: FaultServer;
/** the model the runs under test name, and the variable holding its key */
let MODEL = 'claude-sonnet-4-6';
let KEY = 'ANTHROPIC_API_KEY';
/** the worker's model environment: a test may take the key away */
const modelEnv: NodeJS.ProcessEnv = {};
/** what a test does when an activity reaches one of its test points (testing-hooks.ts), in place of a crash */
const atPoint = new Map<CrashPoint, () => void>();

beforeAll(async () => {
  anthropicApi = await startFaultServer();
  openaiApi = await startFaultServer({ wire: 'openai' });
  responsesApi = await startFaultServer({ wire: 'openai-responses' });
  Object.assign(modelEnv, {
    ANTHROPIC_API_KEY: 'sk-fault',
    ANTHROPIC_BASE_URL: anthropicApi.url,
    OPENAI_API_KEY: 'sk-fault',
    OPENAI_BASE_URL: responsesApi.url,
    KILN_OPENAI_COMPATIBLE_URLS: openaiApi.url,
  });
  const model = (spec: string, runId: string) => createModelClient({ spec, runId, env: modelEnv, stall: { firstByteMs: 1500, idleMs: 1500 } });
  const crash = (point: CrashPoint) => atPoint.get(point)?.();
  t = await workflowTestEnv('kiln-fault-tests', { model, crash, env: { ...process.env, KILN_TURNS_AHEAD_MS: '1000' } });
  oneTurn = await workflowTestEnv('kiln-fault-tests-one-turn', { model, crash, env: { ...process.env, KILN_TURNS_AHEAD_MS: '0' } }, { server: t.env });
  chat = await workflowTestEnv('kiln-fault-tests-openai', { model, crash, env: { ...process.env, KILN_TURNS_AHEAD_MS: '1000' } }, { server: t.env });
});
beforeEach(() => {
  useWire('anthropic');
  // a test that fails leaves nothing queued for the next; an empty queue ends a run at once
  atPoint.clear();
  for (const server of [anthropicApi, openaiApi, responsesApi]) {
    server.clear();
    server.setDefault({ fault: 'status', status: 400, type: 'invalid_request_error', message: 'the test queued no more answers' });
  }
});
afterAll(async () => {
  await chat?.stop();
  await oneTurn?.stop();
  await t?.stop();
  await anthropicApi?.close();
  await openaiApi?.close();
  await responsesApi?.close();
});

type Wire = 'anthropic' | 'openai' | 'openai-responses';
/** The fault server, model name and worker setting a run on this wire format needs: a key, or leave to call a compatible server. */
function useWire(wire: Wire): void {
  const pick = {
    anthropic: [anthropicApi, 'claude-sonnet-4-6', 'ANTHROPIC_API_KEY'],
    openai: [openaiApi, `openai-compatible@${openaiApi.url}:qwen3-coder`, 'KILN_OPENAI_COMPATIBLE_URLS'],
    'openai-responses': [responsesApi, 'openai:gpt-4.1', 'OPENAI_API_KEY'],
  } as const;
  [api, MODEL, KEY] = pick[wire];
}
const use = (name: string, input: unknown, id?: string): FaultReply['content'][number] => ({ type: 'tool_use', name, input, ...(id ? { id } : {}) });
const reply = (...content: FaultReply['content']): FaultReply => ({ content });
/** What Kiln said last: the last message's content, or on the Responses API the last input item's (a tool output's `output`). */
const lastUserText = (r: RecordedRequest) => {
  const last = ((r.body.input as unknown[] | undefined) ?? r.body.messages)?.at(-1) as { content?: unknown; output?: unknown } | undefined;
  return JSON.stringify(last?.content ?? last?.output ?? '');
};
/** The last steps of a run that succeeds: the model adds b.txt, runs the check and finishes. */
function addsB(): void {
  api.push(reply(use('create_file', { path: 'b.txt', content: 'b\n' })));
  api.push(reply(use('run_command', { command: 'test -f b.txt', reason: 'the check' })));
  api.push(reply(use('finish', { summary: 'b.txt added' })));
}

/**
 * A run's input here: nobody answers a run that waits for a person, so it ends blocked at once and
 * the test fails on its state, rather than waiting the default 10 minutes past the test's limit.
 */
const runInput = (over: Parameters<typeof testInput>[0]) => testInput({ humanTimeoutMs: 1000, ...over });

/** A first turn that only reads: with turns ahead, the turn after it is taken in the same activity. */
const readsFirst = () => reply(use('read_file', { path: 'a.txt' }));

/** Seconds between the requests of a run, in order. */
const gaps = (reqs: RecordedRequest[]) => reqs.slice(1).map((q, i) => (q.at - reqs[i]!.at) / 1000);

/**
 * Every fault of the model path, with the turn activity taking turns ahead (the default) and one
 * turn each: a fault costs the same model calls and the same waits either way.
 */
const MODES: Array<{ mode: string; worker: () => WorkflowTestEnv; wire: Wire }> = [
  { mode: 'turns ahead (KILN_TURNS_AHEAD_MS=1000, the default)', worker: () => t, wire: 'anthropic' },
  { mode: 'one turn per activity (KILN_TURNS_AHEAD_MS=0)', worker: () => oneTurn, wire: 'anthropic' },
  { mode: 'Chat Completions (an openai-compatible server), turns ahead', worker: () => chat, wire: 'openai' },
  { mode: 'the Responses API (an openai: model), turns ahead', worker: () => chat, wire: 'openai-responses' },
];

/** Neither wire format may carry an assistant message with nothing in it. */
const hasContent = (m: { content?: unknown; tool_calls?: unknown[] }) =>
  (Array.isArray(m.content) || typeof m.content === 'string' ? m.content.length : 0) + (m.tool_calls?.length ?? 0) > 0;

describe.each(MODES)('faults from the model API, $mode', ({ mode, worker, wire }) => {
  beforeEach(() => useWire(wire));
  it('duplicate tool_use ids and a call cut by max_tokens are refused, the model asked again, and nothing half-done ships', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push(
      duplicateIdsReply(
        { name: 'edit', input: { path: 'a.txt', old_string: 'hello', new_string: 'bye' } },
        { name: 'create_file', input: { path: 'b.txt', content: 'bee\n' } },
      ),
      (req) => {
        expect(lastUserText(req)).toContain('shared the id');
        return maxTokensCutReply('create_file', { path: 'c.txt', content: 'the whole file, to its very end\n' }, 40);
      },
      (req) => {
        expect(lastUserText(req)).toContain('cut off by the output token limit');
        return reply(
          use('edit', { path: 'a.txt', old_string: 'hello', new_string: 'bye' }),
          use('create_file', { path: 'b.txt', content: 'bee\n' }),
          use('create_file', { path: 'c.txt', content: 'the whole file, to its very end\n' }),
        );
      },
      reply(use('run_command', { command: 'test -f b.txt', reason: 'the check' })),
      reply(use('finish', { summary: 'done' })),
    );
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 })));
    expect(r.state, readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8').slice(-3000)).toBe('succeeded');
    const patch = readFileSync(r.patchPath, 'utf8');
    expect(patch).toContain('+bye');
    expect(patch).toContain('+the whole file, to its very end');
    expect(patch).not.toMatch(/^\+the whole file(?!, to its very end)/m);
    const mine = api.requests.slice(first);
    expect(mine).toHaveLength(5);
    for (const req of mine) {
      // never an assistant message without content; never two results for one id
      for (const m of req.body.messages ?? []) if (m.role === 'assistant') expect(hasContent(m)).toBe(true);
      const ids = JSON.stringify(req.body.messages ?? req.body.input).match(/"tool_(?:use|call)_id":"[^"]+"|"function_call_output","call_id":"[^"]+"/g) ?? [];
      expect(new Set(ids).size).toBe(ids.length);
    }
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).toContain('refused_reply');
    // all five calls are in the cost ledger, the refused ones too
    expect(ledger(r).filter((l) => l.event === 'answered')).toHaveLength(5);
  });

  it('the spend-limit 429 is not retried: blocked at once with the reason, one request', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push({ fault: 'spend_limit' });
    const t0 = Date.now();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL })));
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/spend limit/);
    expect(api.requests.length - first).toBe(1);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(ledger(r).map((l) => l.event)).toEqual(['start', 'failed']);
  });

  it.each([
    ['the spend-limit 429', { fault: 'spend_limit' }, /spend limit/],
    ['a 400', { fault: 'status', status: 400, type: 'invalid_request_error', message: 'messages: too long' }, /refused the request \(400\)/],
    ['a 401', { fault: 'status', status: 401, type: 'authentication_error', message: 'invalid x-api-key' }, /credentials \(401\)/],
    ['a 403', { fault: 'status', status: 403, type: 'permission_error', message: 'not allowed' }, /may not do this \(403\)/],
  ] as const)('%s in a later turn is one model call: blocked at once, the turns before it counted', async (_name, fault, why) => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push(readsFirst(), fault);
    const t0 = Date.now();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL })));
    const seconds = (Date.now() - t0) / 1000;
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(why);
    expect(r.reason).toContain('model turn 2');
    // the read turn, and the failing turn once
    expect(api.requests.length - first).toBe(2);
    expect(r.turns).toBe(2);
    expect(
      ledger(r)
        .filter((l) => String(l.call).endsWith(':1:2'))
        .map((l) => l.event),
    ).toEqual(['start', 'failed']);
    console.log(`[cost] ${mode}: ${_name} in turn 2: ${api.requests.length - first - 1} model call, run ended after ${seconds.toFixed(1)} s`);
  });

  it('a 429 with retry-after 3 and then a 500 in a later turn wait what they say: 3 s, then the backoff of a second failure (2 s)', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push(readsFirst(), { fault: 'rate_limit', retryAfterS: 3 }, { fault: 'server_error', status: 500 });
    addsB();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 })));
    expect(r.state).toBe('succeeded');
    const mine = api.requests.slice(first);
    expect(mine.map((q) => q.answer)).toEqual(['reply', 'rate_limit', 'server_error', 'reply', 'reply', 'reply']);
    const [, afterLimit, afterServer] = gaps(mine);
    expect(afterLimit).toBeGreaterThanOrEqual(2.9);
    expect(afterServer).toBeGreaterThanOrEqual(1.9);
    // one logical call, one idempotency key across its retries
    expect(new Set(mine.slice(1, 4).map((q) => q.headers['idempotency-key'])).size).toBe(1);
    console.log(
      `[cost] ${mode}: 429 retry-after 3 then 500 in turn 2: 3 calls for the turn, waited ${afterLimit!.toFixed(1)} s then ${afterServer!.toFixed(1)} s`,
    );
  });

  it('a model that keeps sending duplicate tool ids in a later turn gets 3 refused replies, then the run blocks', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    const dup = () => duplicateIdsReply({ name: 'read_file', input: { path: 'a.txt' } }, { name: 'read_file', input: { path: 'a.txt' } });
    api.push(readsFirst(), dup(), dup(), dup(), dup(), dup(), dup());
    const t0 = Date.now();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, maxAttempts: 1 })));
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/model turn 2: the model sent 3 replies in a row that Kiln refused/);
    expect(api.requests.length - first).toBe(1 + 3);
    console.log(`[cost] ${mode}: duplicate ids forever in turn 2: 3 calls, run ended after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

  it('a reply that cannot be read and a stall in a later turn: each retried as Temporal paces it, and every reply billed is in the ledger once', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push(readsFirst(), { fault: 'unreadable' }, { fault: 'stall' });
    addsB();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 })));
    expect(r.state).toBe('succeeded');
    const mine = api.requests.slice(first);
    expect(mine.map((q) => q.answer)).toEqual(['reply', 'unreadable', 'stall', 'reply', 'reply', 'reply']);
    const [, afterUnreadable, afterStall] = gaps(mine);
    // the first retry's interval (1 s); then the idle limit (1.5 s here) and the second interval (2 s)
    expect(afterUnreadable).toBeGreaterThanOrEqual(0.9);
    expect(afterStall).toBeGreaterThanOrEqual(3.4);
    const served = servedTotal(mine);
    expect(served.output).toBeGreaterThan(0);
    expect(ledgerTotal(r)).toEqual(served);
    console.log(
      `[cost] ${mode}: unreadable reply then stall in turn 2: 3 calls for the turn, waited ${afterUnreadable!.toFixed(1)} s then ${afterStall!.toFixed(1)} s`,
    );
  });

  it('a worker without the API key (for a compatible server: leave to call it) blocks the run at once, saying what is missing', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const key = modelEnv[KEY];
    delete modelEnv[KEY];
    try {
      const first = api.requests.length;
      const t0 = Date.now();
      const r = await outcome(await worker().start(runInput({ repo, model: MODEL })));
      expect(r.state).toBe('blocked');
      expect(r.reason).toContain(KEY);
      expect(Date.now() - t0).toBeLessThan(15_000);
      expect(api.requests.length).toBe(first);
    } finally {
      modelEnv[KEY] = key;
    }
  });

  it('a 429 with retry-after, then a hang before the first byte: retried with one idempotency key, every call in the ledger', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const first = api.requests.length;
    api.push({ fault: 'rate_limit', retryAfterS: 1 }, { fault: 'hang' }, reply(use('finish', { summary: 'nothing to change' })));
    const t0 = Date.now();
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, checks: ['true'] })));
    expect(Date.now() - t0).toBeLessThan(30_000);
    const mine = api.requests.slice(first);
    // (a verifier that refuses an empty patch may ask for one more turn: that is the next call, not these)
    expect(mine.slice(0, 3).map((q) => q.answer)).toEqual(['rate_limit', 'hang', 'reply']);
    const keys = new Set(mine.slice(0, 3).map((q) => q.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    const lines = ledger(r);
    const turn1 = lines.filter((l) => String(l.call).endsWith(':1:1'));
    expect(turn1.map((l) => l.event)).toEqual(['start', 'failed', 'start', 'failed', 'start', 'billed', 'answered']);
  });
});

describe('cancellation', () => {
  it('reaches a running command within ~2 s at the default heartbeat timeout, and records who cancelled', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const marker = `sleep 37.${Math.floor(Math.random() * 1000)}`;
    api.push(reply(use('run_command', { command: marker, reason: 'the check' })));
    // the check is quick: the baseline runs it before the first turn, and the sleep to cancel is the model's own command
    const input = runInput({ repo, model: MODEL, checks: ['true'], heartbeatTimeoutMs: 30_000 });
    const handle = await t.start(input);
    const running = () => spawnSync('pgrep', ['-f', marker]).status === 0;
    const deadline = Date.now() + 30_000;
    while (!running()) {
      if (Date.now() > deadline) throw new Error('the command never started');
      await new Promise((res) => setTimeout(res, 100));
    }
    const t0 = Date.now();
    await handle.signal(cancelRequestSignal, { by: 'alice', reason: 'wrong goal' });
    await handle.cancel();
    while (running() && Date.now() - t0 < 15_000) await new Promise((res) => setTimeout(res, 50));
    const killedAfter = Date.now() - t0;
    expect(killedAfter).toBeLessThan(3000);
    await expect(handle.result()).rejects.toThrow();
    expectCancelledByAlice(repo, input.runId);
  });
});

describe.each(MODES)('tool input that is not JSON, $mode', ({ worker, wire }) => {
  beforeEach(() => useWire(wire));
  /** After the reply queued first, the model adds b.txt, runs the check and finishes; what Kiln answered that reply. */
  async function addsBAfter(repo: string): Promise<{ r: RunResult; answer: string }> {
    let answer = '';
    api.push((req) => {
      answer = lastUserText(req);
      return reply(use('create_file', { path: 'b.txt', content: 'b\n' }));
    });
    api.push(reply(use('run_command', { command: 'test -f b.txt', reason: 'the check' })));
    api.push(reply(use('finish', { summary: 'b.txt added' })));
    const r = await outcome(await worker().start(runInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 })));
    return { r, answer };
  }

  it('is answered once with an error that names it, and the run goes on; the reply is not asked for again', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const asked = api.requests.length;
    api.push(reply({ type: 'tool_use', name: 'create_file', input: {}, rawInput: '{"path": "b.txt", content: b}' }));
    const { r, answer } = await addsBAfter(repo);
    expect(r.state).toBe('succeeded');
    // Chat Completions has no is_error flag: the tool message says it
    expect(answer).toMatch(wire === 'anthropic' ? /is_error\\?":true/ : /^"Error: The input/);
    expect(answer).toMatch(/create_file call is not valid JSON.*content: b/);
    expect(api.requests.length - asked).toBe(4);
  });

  it('control: a call cut by max_tokens is still refused and asked again, not run', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const asked = api.requests.length;
    api.push(maxTokensCutReply('create_file', { path: 'b.txt', content: 'b\n' }, 20));
    const { r, answer } = await addsBAfter(repo);
    expect(r.state).toBe('succeeded');
    expect(answer).toMatch(/cut off by the output token limit/);
    expect(api.requests.length - asked).toBe(4);
  });
});

describe.each(MODES)('cancellation during a model call, $mode', ({ worker, wire }) => {
  beforeEach(() => useWire(wire));
  it('ends cancelled, not blocked: who cancelled, the artifacts and the clean-up all happen', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    // the model thinks (the stream pings) until the cancel reaches the call and aborts it
    api.push({ fault: 'slow', ms: 60_000 });
    const input = runInput({ repo, model: MODEL, checks: ['true'] });
    const asked = api.requests.length;
    const handle = await worker().start(input);
    const deadline = Date.now() + 30_000;
    while (api.requests.length === asked) {
      if (Date.now() > deadline) throw new Error('the model was never asked');
      await new Promise((res) => setTimeout(res, 50));
    }
    await handle.signal(cancelRequestSignal, { by: 'alice', reason: 'wrong goal' });
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expectCancelledByAlice(repo, input.runId);
    // asked once: the cancelled call is not asked again
    expect(api.requests.length - asked).toBe(1);
  });

  it('control: a model call that answers after thinking goes on as usual', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    api.push({ fault: 'slow', ms: 2500, reply: reply(use('create_file', { path: 'b.txt', content: 'b\n' })) });
    api.push(reply(use('run_command', { command: 'test -f b.txt', reason: 'the check' })));
    api.push(reply(use('finish', { summary: 'b.txt added' })));
    const input = runInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 });
    const result = await outcome(await worker().start(input));
    expect(result.state).toBe('succeeded');
    // the pings kept the stall guard (1.5 s idle) quiet through a 2.5 s think
    expect(ledger(result).filter((l) => l.event === 'answered')).not.toHaveLength(0);
  });
});

const disk = smallDisk();

/** A repo of `files` on the small disk; `body` runs with where to fill it, and the fill is freed after, whatever happened. */
async function onSmallDisk(name: string, files: Record<string, string | Uint8Array>, body: (repo: string, fill: string) => Promise<void>): Promise<void> {
  const repo = repoAt(join(disk!, `repo-${name}`), files);
  const fill = join(disk!, `fill-${name}`);
  try {
    await body(repo, fill);
  } finally {
    freeFill(fill);
  }
}

/** Fills the disk the first time an activity reaches `point`; the time it did (0: not yet). */
function fillsAt(point: CrashPoint, fill: string): () => number {
  let filledAt = 0;
  atPoint.set(point, () => {
    if (filledAt) return;
    filledAt = Date.now();
    fillUp(fill);
  });
  return () => filledAt;
}

/** The model changes a.txt's hello to bye, runs the check (BYE) and finishes. */
const BYE = 'grep -q bye a.txt';
function saysBye(): void {
  api.push(
    reply(use('edit', { path: 'a.txt', old_string: 'hello', new_string: 'bye' })),
    reply(use('run_command', { command: BYE, reason: 'the check' })),
    reply(use('finish', { summary: 'done' })),
  );
}

describe.skipIf(!disk)(`a full disk (${disk ? '64 MB tmpfs' : 'skipped: needs root to mount a 64 MB tmpfs'})`, () => {
  afterAll(() => {
    if (disk) unmount(disk);
  });

  it('a tool that hits ENOSPC is a tool error the model reads; temp files go; freeing space lets the run finish with its artifacts', async () => {
    // an edit's journal holds the whole new file: a 2 MB file needs more room than the turn did
    await onSmallDisk('tool', { 'big.txt': `${'line of text\n'.repeat(160_000)}end\n` }, async (repo, fill) => {
      api.push(
        () => {
          fillAllBut(fill, 1024 * 1024);
          return reply(use('edit', { path: 'big.txt', old_string: 'end\n', new_string: 'the end\n' }));
        },
        (req) => {
          expect(lastUserText(req)).toContain('disk is full');
          freeFill(fill);
          return reply(use('edit', { path: 'big.txt', old_string: 'end\n', new_string: 'the end\n' }));
        },
        reply(use('run_command', { command: 'grep -q "the end" big.txt', reason: 'the check' })),
        reply(use('finish', { summary: 'done' })),
      );
      const r = await outcome(await t.start(runInput({ repo, model: MODEL, checks: ['grep -q "the end" big.txt'] })));
      expect(r.state).toBe('succeeded');
      expect(readFileSync(r.patchPath, 'utf8')).toContain('+the end');
      for (const f of ['metrics.json', 'events.jsonl', 'model-calls.jsonl']) expect(existsSync(join(r.artifactsDir, f)), f).toBe(true);
      const tmp = (readdirSync(join(repo, '.kiln'), { recursive: true }) as string[]).filter((f) => f.endsWith('.tmp'));
      expect(tmp).toEqual([]);
    });
  });

  // the turn waits out all its disk-full retries (DISK_FULL_RETRY_MS apart) before the run ends:
  // most of the default limit, which a loaded machine then overruns
  it('a disk that stays full: the run still ends (never WorkflowExecutionFailed) and says where its artifacts are', async () => {
    await onSmallDisk('stays-full', { 'a.txt': 'hello\n' }, async (repo, fill) => {
      api.push(reply(use('edit', { path: 'a.txt', old_string: 'hello', new_string: 'bye' })), () => {
        fillUp(fill);
        return reply(use('finish', { summary: 'done' }));
      });
      const asked = api.requests.length;
      const handle = await t.start(runInput({ repo, model: MODEL, maxAttempts: 1 }));
      const r = await outcome(handle);
      expect(['blocked', 'needs_human', 'succeeded']).toContain(r.state);
      expect(`${r.reason}`).toMatch(/disk/i);
      // the reply that arrived as the disk filled is paid for: noting it may fail, asking again must not
      expect(api.requests.length - asked).toBe(2);
      // the run ends with its result: completed, or failed as "not achieved" (a blocked run) — never an activity failure
      const status = (await handle.describe()).status.name;
      if (status !== 'COMPLETED') {
        expect(status).toBe('FAILED');
        const err = (await handle.result().catch((e: unknown) => e)) as { cause?: { type?: string } };
        expect(err.cause?.type).toBe(RUN_NOT_ACHIEVED);
      }
    });
  }, 180_000);

  it('a disk that fills as the verified tree is compared: the run waits, status says so, and space freed 30 s later ships the verified patch', async () => {
    await onSmallDisk('current-tree', { 'a.txt': 'hello\n' }, async (repo, fill) => {
      const filledAt = fillsAt('current-tree', fill);
      saysBye();
      const handle = await t.start(runInput({ repo, model: MODEL, checks: [BYE], maxAttempts: 1 }));
      // what `kiln run` prints as it follows the run
      const printed: string[] = [];
      const following = follow(handle, { print: (l) => printed.push(l) });
      let wait: DiskWait | undefined;
      let status = '';
      for (const deadline = Date.now() + 120_000; !wait && Date.now() < deadline; await new Promise((r) => setTimeout(r, 300))) {
        wait = await diskWait(handle);
        if (wait) status = formatStatus(await handle.query(statusQuery), undefined, { disk: diskWaitLine(wait) });
        else if ((await handle.describe()).status.name !== 'RUNNING') break;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, filledAt() + 30_000 - Date.now())));
      freeFill(fill);
      const freedAt = Date.now();
      const r = await outcome(handle);
      const endedAt = Date.now();
      console.log(
        `full disk at currentTree: freed after ${((freedAt - filledAt()) / 1000).toFixed(1)} s, the run ended ${((endedAt - freedAt) / 1000).toFixed(1)} s later`,
      );
      console.log(`kiln status while the disk was full:\n${status}`);
      expect(r.state, r.reason).toBe('succeeded');
      expect(status).toMatch(/^ {2}disk: {6}the worker's disk is full: currentTree waits for space \(try \d of 5( in \d+ s)?\); free space on the worker/m);
      await following;
      expect(printed.filter((l) => l.includes("the worker's disk is full: currentTree waits for space")).length).toBeGreaterThanOrEqual(1);
      expect(readFileSync(r.patchPath, 'utf8')).toContain('+bye');
    });
  }, 180_000);

  it('a disk that fills as the baseline starts beside the turns: the baseline waits and is taken once space is freed, not dropped', async () => {
    await onSmallDisk('baseline', { 'a.txt': 'hello\n' }, async (repo, fill) => {
      let filledAt = 0;
      atPoint.set('baseline', () => {
        if (filledAt) return;
        filledAt = Date.now();
        fillUp(fill);
        setTimeout(() => freeFill(fill), 30_000);
      });
      api.push(
        reply(use('edit', { path: 'a.txt', old_string: 'hello', new_string: 'bye' })),
        // the model thinks past the freeing of the space: the baseline starts beside this turn
        { fault: 'slow', ms: 40_000, reply: reply(use('run_command', { command: BYE, reason: 'the check' })) },
        reply(use('finish', { summary: 'done' })),
      );
      const handle = await t.start(runInput({ repo, model: MODEL, checks: [BYE], maxAttempts: 1 }));
      const r = await outcome(handle);
      expect(filledAt, `the baseline never started (${r.state}: ${r.reason})`).toBeGreaterThan(0);
      expect(r.state, r.reason).toBe('succeeded');
      const events = (await handle.fetchHistory()).events ?? [];
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'takeBaseline');
      const id = String(scheduled?.eventId);
      const ended = events.find((e) =>
        [e.activityTaskCompletedEventAttributes, e.activityTaskFailedEventAttributes].some((a) => String(a?.scheduledEventId) === id),
      );
      const failure = ended?.activityTaskFailedEventAttributes?.failure;
      expect(failure?.cause?.message ?? failure?.message, 'the baseline was dropped').toBeUndefined();
      expect(ended?.activityTaskCompletedEventAttributes).toBeTruthy();
    });
  }, 180_000);

  it('a disk full as a verified run ends: removing its worktree frees the space, and the patch written then is the verified one, not empty', async () => {
    // the worktree's copy of big.bin is what removing the worktree gives back
    await onSmallDisk('finalize', { 'a.txt': 'hello\n', 'big.bin': randomBytes(6 * 1024 * 1024) }, async (repo, fill) => {
      atPoint.set('finalize', () => fillUp(fill));
      saysBye();
      const r = await outcome(await t.start(runInput({ repo, model: MODEL, checks: [BYE], maxAttempts: 1 })));
      expect(r.state, r.reason).toBe('succeeded');
      expect(r.reason).toMatch(/the artifacts were written after the worktree was removed/);
      expect(readFileSync(r.patchPath, 'utf8')).toContain('+bye');
    });
  }, 180_000);

  it('a disk that stays full after verification: the wait ends blocked, and the verified patch is kept where there was room', async () => {
    await onSmallDisk('after-verify', { 'a.txt': 'hello\n' }, async (repo, fill) => {
      const filledAt = fillsAt('current-tree', fill);
      saysBye();
      const r = await outcome(await t.start(runInput({ repo, model: MODEL, checks: [BYE], maxAttempts: 1 })));
      console.log(`a disk that stays full: the run waited ${((Date.now() - filledAt()) / 1000).toFixed(1)} s, then: ${r.state}: ${r.reason}`);
      expect(r.state).toBe('blocked');
      expect(r.reason).toMatch(/currentTree failed: DiskFullError: the worker's disk is full/);
      expect(r.reason).toMatch(/its verified patch were written to/);
      expect(r.reason).not.toMatch(/no patch/);
      expect(readFileSync(r.patchPath, 'utf8')).toContain('+bye');
    });
  }, 180_000);
});
