/** `kiln serve`'s routes in process over a fake run store: auth, roles, idempotency, limits, bad input, approvals, events. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { verifyApproval, verifyRunStart } from '../../../src/auth/attestation.js';
import { MAX_BODY_BYTES } from '../../../src/server/app.js';
import { harness, SCRIPT } from './harness.js';
import { pending } from '../../helpers/fake-run-backend.js';

type J = Record<string, any>;
const json = async (r: Response) => (await r.json()) as J;

describe('authentication and roles', () => {
  it('no token, a made-up token and a revoked token are 401; a valid one reads', async () => {
    const h = harness();
    for (const path of ['/runs', '/approvals', '/me', '/runs/x', '/runs/x/events', '/events']) {
      const r = await h.call('GET', path);
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('Bearer');
    }
    expect((await h.call('GET', '/runs', 'kiln_' + 'A'.repeat(43))).status).toBe(401);
    const { token, record } = h.tokens.create({ tenant: 'acme', user: 'zed', role: 'viewer' });
    expect((await h.call('GET', '/runs', token)).status).toBe(200);
    h.tokens.revoke(record.id);
    expect((await h.call('GET', '/runs', token)).status).toBe(401);
  });

  it('a write without a token is 401 and reaches nothing; the same write with one gets through', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const writes: Array<[string, unknown]> = [
      ['/runs', { repo: h.acmeRepo, goal: 'fix it', model: SCRIPT }],
      ['/runs/r1/cancel', {}],
      ['/runs/r1/approvals/appr-1', { decision: 'approve' }],
      ['/runs/r1/human', { action: 'abandon' }],
    ];
    for (const [path, b] of writes) {
      const r = await h.call('POST', path, undefined, b);
      expect(r.status, path).toBe(401);
      expect((await json(r)).error).toBe('unauthorized');
    }
    expect(h.backend.starts + h.backend.decisions.length + h.backend.cancels.length + h.backend.humans.length).toBe(0);
    expect((await h.call('POST', '/runs', h.t.acmeRunner, writes[0]![1])).status).toBe(201);
  });

  it('a viewer reads but neither starts, cancels nor approves; a runner does not approve; an approver does not start', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const start = { repo: h.acmeRepo, goal: 'fix it', model: SCRIPT };
    expect((await h.call('GET', '/runs/r1', h.t.acmeViewer)).status).toBe(200);
    expect((await h.call('POST', '/runs', h.t.acmeViewer, start)).status).toBe(403);
    expect((await h.call('POST', '/runs/r1/cancel', h.t.acmeViewer, {})).status).toBe(403);
    expect((await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeViewer, { decision: 'approve' })).status).toBe(403);
    expect((await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeRunner, { decision: 'approve' })).status).toBe(403);
    expect((await h.call('POST', '/runs/r1/human', h.t.acmeRunner, { action: 'abandon' })).status).toBe(403);
    expect((await h.call('POST', '/runs', h.t.acmeApprover, start)).status).toBe(403);
    expect(h.backend.starts + h.backend.decisions.length + h.backend.cancels.length + h.backend.humans.length).toBe(0);
    // controls: each role does what it is for
    expect((await h.call('POST', '/runs', h.t.acmeRunner, start)).status).toBe(201);
    expect((await h.call('POST', '/runs/r1/cancel', h.t.acmeRunner, {})).status).toBe(202);
    expect((await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'approve' })).status).toBe(200);
  });

  it('every write is attributed to the token user', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const s = await json(await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: SCRIPT }));
    expect(h.backend.runs.get(s.runId)!.info.memo.startedBy).toBe('alice');
    await h.call('POST', '/runs/r1/cancel', h.t.acmeRunner, { reason: 'wrong goal' });
    expect(h.backend.cancels).toEqual([{ runId: 'r1', by: 'alice', reason: 'wrong goal' }]);
    await h.call('POST', '/runs/r1/human', h.t.acmeApprover, { action: 'hint', text: 'look at auth.ts' });
    expect(h.backend.humans[0]!.d).toEqual({ action: 'hint', text: 'look at auth.ts', by: 'bob' });
  });

  it('a run that ends between the look at it and its cancel is "already ended" (409), not a server error; control: an open one cancels', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    h.backend.add('r2', 'acme', { repo: h.acmeRepo });
    h.backend.endBeforeCancel.add('r1');
    const late = await h.call('POST', '/runs/r1/cancel', h.t.acmeRunner, { reason: 'too late' });
    expect(late.status).toBe(409);
    expect((await json(late)).error).toBe('already_ended');
    expect((await h.call('POST', '/runs/r2/cancel', h.t.acmeRunner, {})).status).toBe(202);
    expect(h.backend.cancels.map((c) => c.runId)).toEqual(['r2']);
  });
});

describe('approvals', () => {
  it('forwards the decision with a signature for exactly this user, tenant, run and decision, and by = the user', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const r = await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'approve', scope: 'run' });
    expect(r.status).toBe(200);
    expect((await json(r)).by).toBe('bob');
    const { d } = h.backend.decisions[0]!;
    expect(d).toMatchObject({ approvalId: 'appr-1', approve: true, scope: 'run', by: 'bob', attestation: { user: 'bob', tenant: 'acme' } });
    const at = { execution: 'exec-r1', runId: 'r1', call: 'call-of-appr-1' };
    expect(verifyApproval(h.approvalKey, { ...at, ...d })).toBe(true);
    // the signature covers the decision: the same attestation on a rejection, another execution, run, call or user does not verify
    expect(verifyApproval(h.approvalKey, { ...at, ...d, approve: false })).toBe(false);
    expect(verifyApproval(h.approvalKey, { ...at, ...d, runId: 'r2' })).toBe(false);
    expect(verifyApproval(h.approvalKey, { ...at, ...d, execution: 'exec-other' })).toBe(false);
    expect(verifyApproval(h.approvalKey, { ...at, ...d, call: 'call-of-appr-2' })).toBe(false);
    expect(verifyApproval(h.approvalKey, { ...at, ...d, attestation: { ...d.attestation!, user: 'mallory' } })).toBe(false);
  });

  it('a run that does not answer (no worker) gets no signature: the call it asks about cannot be read, so 409 and nothing is sent', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    h.backend.runs.get('r1')!.state = undefined;
    const r = await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'approve' });
    expect(r.status).toBe(409);
    expect((await json(r)).message).toMatch(/does not answer.*try again/);
    expect(h.backend.decisions).toEqual([]);
  });

  it('a call that needs two approvers is approved once, never for the rest of the run (400 naming scope)', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', {
      repo: h.acmeRepo,
      state: { pendingApprovals: [{ ...pending('appr-1'), approvals: { needed: 2, authenticated: true, by: [] } }] },
    });
    const run = await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'approve', scope: 'run' });
    expect(run.status).toBe(400);
    expect(await json(run)).toMatchObject({ field: 'scope', message: expect.stringMatching(/needs 2 approvers each time.*approve it once/) });
    expect(h.backend.decisions).toEqual([]);
    // the control: once is taken
    expect((await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'approve', scope: 'once' })).status).toBe(200);
    expect(h.backend.decisions).toHaveLength(1);
  });

  it('a rejection needs a reason (400 naming it); an approval that is not pending is 404; an unknown decision is 400', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const noReason = await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'reject' });
    expect(noReason.status).toBe(400);
    expect((await json(noReason)).field).toBe('reason');
    expect((await h.call('POST', '/runs/r1/approvals/appr-9', h.t.acmeApprover, { decision: 'approve' })).status).toBe(404);
    const bad = await json(await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'maybe' }));
    expect(bad.field).toBe('decision');
    expect(h.backend.decisions).toEqual([]);
    const ok = await h.call('POST', '/runs/r1/approvals/appr-1', h.t.acmeApprover, { decision: 'reject', reason: 'no network' });
    expect(ok.status).toBe(200);
    expect(h.backend.decisions[0]!.d).toMatchObject({ approve: false, reason: 'no network', by: 'bob' });
  });
});

describe('POST /runs', () => {
  const body = (h: ReturnType<typeof harness>, over: J = {}) => ({ repo: h.acmeRepo, goal: 'fix it', model: SCRIPT, ...over });

  it('Idempotency-Key: the same key and body give the same run (key order aside); another body is a 409', async () => {
    const h = harness();
    const first = await h.call('POST', '/runs', h.t.acmeRunner, body(h), { 'Idempotency-Key': 'abc' });
    expect(first.status).toBe(201);
    const id = (await json(first)).runId;
    const { model, goal, repo } = body(h);
    const again = await h.call('POST', '/runs', h.t.acmeRunner, { model, goal, repo }, { 'Idempotency-Key': 'abc' });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ runId: id, created: false });
    const other = await h.call('POST', '/runs', h.t.acmeRunner, body(h, { goal: 'something else' }), { 'Idempotency-Key': 'abc' });
    expect(other.status).toBe(409);
    expect((await json(other)).error).toBe('idempotency_conflict');
    expect(h.backend.starts).toBe(1);
    // without a key, each request is its own run
    await h.call('POST', '/runs', h.t.acmeRunner, body(h));
    await h.call('POST', '/runs', h.t.acmeRunner, body(h));
    expect(h.backend.starts).toBe(3);
  });

  it('the start is signed after Temporal names the execution, for that execution, tenant, repo and user; the input carries a claim that verifies for none', async () => {
    const h = harness();
    const r = await h.call('POST', '/runs', h.t.acmeRunner, body(h));
    expect(r.status).toBe(201);
    const runId = (await json(r)).runId as string;
    expect(h.backend.attested).toHaveLength(1);
    const { execution, start } = h.backend.attested[0]!;
    expect(start).toMatchObject({ execution: `exec-${runId}`, runId, user: 'alice', tenant: 'acme' });
    expect(start.repo).toBe((await h.backend.input(runId))!.repo);
    expect(verifyRunStart(h.approvalKey, { execution, runId }, start)).toBe(true);
    const claim = (await h.backend.input(runId))!.requestedBy!;
    expect(verifyRunStart(h.approvalKey, { execution, runId }, { ...start, sig: claim.sig })).toBe(false);
    // a start the server attached to (same Idempotency-Key) is not signed again
    await h.call('POST', '/runs', h.t.acmeRunner, body(h), { 'Idempotency-Key': 'k' });
    await h.call('POST', '/runs', h.t.acmeRunner, body(h), { 'Idempotency-Key': 'k' });
    expect(h.backend.attested).toHaveLength(2);
  });

  it('a repo the tenant was not given is 403 with what to do; a path that resolves elsewhere (..) too', async () => {
    const h = harness();
    const r = await h.call('POST', '/runs', h.t.acmeRunner, body(h, { repo: '/etc' }));
    expect(r.status).toBe(403);
    expect(await json(r)).toMatchObject({ error: 'repo_not_allowed', field: 'repo' });
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h, { repo: `${h.acmeRepo}/../../${h.globexRepo}` }))).status).toBe(403);
    expect(h.backend.starts).toBe(0);
  });

  it('bad input is a 400 naming the field, never a stack trace', async () => {
    const h = harness();
    const cases: Array<[unknown, string | undefined]> = [
      [{ repo: h.acmeRepo, model: SCRIPT }, 'goal'],
      [body(h, { goal: '   ' }), 'goal'],
      [body(h, { maxUsd: -1 }), 'maxUsd'],
      [body(h, { maxWall: 'soon' }), 'maxWall'],
      [body(h, { approvalMode: 'yolo' }), 'approvalMode'],
      [body(h, { model: 'scripted:/nonexistent/script.json' }), 'model'],
      [body(h, { surprise: 1 }), 'surprise'],
      ['{not json', undefined],
    ];
    for (const [b, field] of cases) {
      const r = await h.call('POST', '/runs', h.t.acmeRunner, b);
      const j = await json(r);
      expect(r.status, JSON.stringify(b)).toBe(400);
      expect(j.field, j.message).toBe(field);
      expect(JSON.stringify(j)).not.toMatch(/\n\s+at |\.ts:\d+/);
    }
    expect(h.backend.starts).toBe(0);
  });

  it('a body over the limit is 413', async () => {
    const h = harness();
    const r = await h.call('POST', '/runs', h.t.acmeRunner, body(h, { goal: 'x'.repeat(MAX_BODY_BYTES + 10) }));
    expect(r.status).toBe(413);
    expect((await json(r)).error).toBe('too_large');
  });

  it('a chunked body over the limit (no Content-Length) is 413 too, and starts nothing', async () => {
    const h = harness();
    const chunk = new TextEncoder().encode(JSON.stringify(body(h, { goal: 'x'.repeat(16 * 1024) })));
    const stream = (times: number) =>
      new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < times; i++) c.enqueue(chunk);
          c.close();
        },
      });
    const post = (times: number) =>
      h.app.request('/runs', {
        method: 'POST',
        headers: { Authorization: `Bearer ${h.t.acmeRunner}`, 'Content-Type': 'application/json' },
        body: stream(times),
        duplex: 'half',
      } as RequestInit);
    const big = await post(Math.ceil(MAX_BODY_BYTES / chunk.length) + 1);
    expect(big.status).toBe(413);
    expect((await json(big)).error).toBe('too_large');
    expect(h.backend.starts).toBe(0);
    // control: one chunk, under the limit, streamed the same way
    expect((await post(1)).status).toBe(201);
  });

  it('two starts racing for the last place under the concurrent-run limit: one 201, one 429', async () => {
    const h = harness({ acme: { maxConcurrentRuns: 1 } });
    // each start takes a while and the list does not show it yet, as with Temporal
    h.backend.startDelayMs = 50;
    h.backend.listLags = true;
    const [a, b] = await Promise.all([h.call('POST', '/runs', h.t.acmeRunner, body(h)), h.call('POST', '/runs', h.t.acmeRunner, body(h))]);
    expect([a.status, b.status].sort()).toEqual([201, 429]);
    expect(h.backend.starts).toBe(1);
    // control: with room for two, both start
    const roomy = harness({ acme: { maxConcurrentRuns: 2 } });
    roomy.backend.startDelayMs = 50;
    roomy.backend.listLags = true;
    const both = await Promise.all([
      roomy.call('POST', '/runs', roomy.t.acmeRunner, body(roomy)),
      roomy.call('POST', '/runs', roomy.t.acmeRunner, body(roomy)),
    ]);
    expect(both.map((r) => r.status)).toEqual([201, 201]);
  });

  it('the concurrent-run limit is a 429 with Retry-After; a run that ended frees its place', async () => {
    const h = harness({ acme: { maxConcurrentRuns: 2 } });
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h))).status).toBe(201);
    const second = await json(await h.call('POST', '/runs', h.t.acmeRunner, body(h)));
    const third = await h.call('POST', '/runs', h.t.acmeRunner, body(h));
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await json(third)).toMatchObject({ error: 'limit_reached', limit: 'concurrent_runs' });
    h.backend.close(second.runId);
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h))).status).toBe(201);
  });

  it('the USD budget a day: open runs reserve their maxUsd, ended ones count what they cost; 429 says when it resets', async () => {
    const now = new Date('2026-12-01T15:00:00.000Z');
    const h = harness({ acme: { usdPerDay: 25 }, now: () => now });
    h.backend.add('yesterday', 'acme', { repo: h.acmeRepo, open: false, result: { costUsd: 1000 }, startedAt: '2026-11-30T23:00:00.000Z' });
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h, { maxUsd: 10 }))).status).toBe(201);
    const b = await json(await h.call('POST', '/runs', h.t.acmeRunner, body(h, { maxUsd: 10 })));
    const over = await h.call('POST', '/runs', h.t.acmeRunner, body(h, { maxUsd: 10 }));
    expect(over.status).toBe(429);
    const j = await json(over);
    expect(j).toMatchObject({ limit: 'usd_per_day', resetsAt: '2026-12-02T00:00:00.000Z' });
    expect(over.headers.get('retry-after')).toBe(String(9 * 3600));
    expect(j.message).toContain('$20.00');
    // a smaller run fits; one that ended cheap gives back the rest of its reservation
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h, { maxUsd: 5 }))).status).toBe(201);
    h.backend.close(b.runId, { costUsd: 0.5 });
    expect((await h.call('POST', '/runs', h.t.acmeRunner, body(h, { maxUsd: 9 }))).status).toBe(201);
  });

  it('rate limit per token: past requestsPerMinute a 429; another token of the tenant is not slowed', async () => {
    const h = harness({ acme: { requestsPerMinute: 3 } });
    for (let i = 0; i < 3; i++) expect((await h.call('GET', '/runs', h.t.acmeViewer)).status).toBe(200);
    const r = await h.call('GET', '/runs', h.t.acmeViewer);
    expect(r.status).toBe(429);
    expect((await json(r)).limit).toBe('rate');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await h.call('GET', '/runs', h.t.acmeRunner)).status).toBe(200);
  });
});

describe('a failure inside the server', () => {
  it('is a 500 {error: "internal"} with no stack or path in the body; the operator log has the stack', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      h.backend.describe = async () => {
        throw new Error('visibility store unreachable at /var/lib/temporal/secret.db');
      };
      const r = await h.call('GET', '/runs/r1', h.t.acmeViewer);
      expect(r.status).toBe(500);
      const text = await r.text();
      expect(JSON.parse(text)).toEqual({ error: 'internal', message: expect.any(String) });
      expect(text).not.toMatch(/\n\s+at |\.ts:\d+|secret\.db|visibility store/);
      expect(logged.mock.calls.flat().join('\n')).toMatch(/GET \/runs\/r1: Error: visibility store unreachable[^]*\n\s+at /);
    } finally {
      logged.mockRestore();
    }
    // control: the same request against a working store
    const ok = harness();
    ok.backend.add('r1', 'acme', { repo: ok.acmeRepo });
    expect((await ok.call('GET', '/runs/r1', ok.t.acmeViewer)).status).toBe(200);
  });
});

describe('GET /runs filters', () => {
  it('passes the fleet filters; a bad one is 400 naming it', async () => {
    const h = harness();
    h.backend.add('a', 'acme', { repo: h.acmeRepo, state: { phase: 'awaiting_approval' } });
    h.backend.add('b', 'acme', { repo: h.acmeRepo, state: { phase: 'editing' } });
    const r = await json(await h.call('GET', '/runs?phase=editing', h.t.acmeViewer));
    expect(r.runs.map((x: J) => x.runId)).toEqual(['b']);
    const bad = await h.call('GET', '/runs?colour=red', h.t.acmeViewer);
    expect(bad.status).toBe(400);
    expect((await json(bad)).field).toBe('colour');
  });
});

const events = (text: string) =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((b) => Object.fromEntries(b.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()])) as Record<string, string>);

describe('GET /events', () => {
  it("the tenant's open runs as one stream: never another tenant's, nor an ended run", async () => {
    const h = harness();
    h.backend.add('a1', 'acme', { repo: h.acmeRepo });
    h.backend.add('a2', 'acme', { repo: h.acmeRepo });
    h.backend.close('a2');
    h.backend.add('g1', 'globex', { repo: h.globexRepo });
    const res = await h.call('GET', '/events', h.t.acmeViewer);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    // the stream does not end: read its first event, then hang up
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    const first = events(text)[0]!;
    expect(first.event).toBe('runs');
    expect((JSON.parse(first.data!) as Array<{ runId: string }>).map((r) => r.runId)).toEqual(['a1']);
  });
});

describe('GET /runs/:id/events', () => {
  it('streams log lines with their seq as id, the state, and the end; Last-Event-ID resumes after it', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    h.backend.close('r1', { state: 'succeeded' });
    const all = events(await (await h.call('GET', '/runs/r1/events', h.t.acmeViewer)).text());
    expect(all.filter((e) => e.event === 'log').map((e) => e.id)).toEqual(['1', '2']);
    expect(all.some((e) => e.event === 'state' && JSON.parse(e.data!).pendingApprovals.length === 1)).toBe(true);
    expect(JSON.parse(all.at(-1)!.data!).result.state).toBe('succeeded');
    const resumed = events(await (await h.call('GET', '/runs/r1/events', h.t.acmeViewer, undefined, { 'Last-Event-ID': '1' })).text());
    expect(resumed.filter((e) => e.event === 'log').map((e) => e.id)).toEqual(['2']);
  });

  it('lines older than the live window come from events.jsonl, so a late resume misses nothing', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', {
      repo: h.acmeRepo,
      state: { log: [5, 6].map((seq) => ({ seq, at: '', kind: 'turn' as const, text: `turn ${seq}` })), logSeq: 6 },
    });
    h.backend.close('r1');
    const dir = join(h.acmeRepo, '.kiln', 'runs', 'r1');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'events.jsonl'),
      [1, 2, 3, 4, 5].map((seq) => JSON.stringify({ seq, at: '', type: 'turn', text: `turn ${seq}` })).join('\n') + '\n',
    );
    const got = events(await (await h.call('GET', '/runs/r1/events', h.t.acmeViewer, undefined, { 'Last-Event-ID': '2' })).text());
    expect(got.filter((e) => e.event === 'log').map((e) => e.id)).toEqual(['3', '4', '5', '6']);
  });

  it('follows a live run until it ends', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    setTimeout(() => {
      const st = h.backend.runs.get('r1')!.state!;
      st.log.push({ seq: 3, at: '', kind: 'phase', text: 'verifying' });
      setTimeout(() => h.backend.close('r1'), 100);
    }, 100);
    const all = events(await (await h.call('GET', '/runs/r1/events', h.t.acmeViewer)).text());
    expect(all.filter((e) => e.event === 'log').map((e) => e.id)).toEqual(['1', '2', '3']);
    expect(all.at(-1)!.event).toBe('end');
  });
});

describe('the document and the page', () => {
  it('serves the OpenAPI document from the zod schemas, without a token', async () => {
    const h = harness();
    const doc = await json(await h.call('GET', '/openapi.json'));
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.schemas.CreateRun.required).toEqual(['repo', 'goal']);
    expect(doc.components.schemas.Decide.properties.decision.enum).toEqual(['approve', 'reject']);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/runs', '/runs/{id}/events', '/approvals', '/runs/{id}/approvals/{approvalId}', '/runs/{id}/human']),
    );
  });

  it('serves the inbox with a CSP that allows only its own script, and no token in the page', async () => {
    const h = harness();
    const r = await h.call('GET', '/');
    expect(r.status).toBe(200);
    const csp = r.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    const html = await r.text();
    expect(html).toContain('<script src="/inbox.js"');
    expect(html).not.toMatch(/<script>|kiln_[A-Za-z0-9_-]{20}/);
    expect((await h.call('GET', '/inbox.js')).headers.get('content-type')).toContain('javascript');
  });

  it('an unknown route is a JSON 404', async () => {
    const h = harness();
    const r = await h.call('GET', '/nope');
    expect(r.status).toBe(404);
    expect((await json(r)).error).toBe('not_found');
  });
});

describe('models allowlist', () => {
  it('a tenant with a models list may use only those (403 naming model); its listed model starts', async () => {
    const h = harness({ acme: { models: ['scripted:examples/scripts/revoked-session.json'] } });
    const r = await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: 'scripted:/etc/passwd' });
    expect(r.status).toBe(403);
    expect(await json(r)).toMatchObject({ error: 'model_not_allowed', field: 'model' });
    expect((await h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', model: SCRIPT })).status).toBe(201);
  });

  it("attack: every role's model is held to the list, also one the request leaves to the repo's .kiln/config", async () => {
    const h = harness({ acme: { models: [SCRIPT] } });
    const start = (extra: Record<string, unknown>) => h.call('POST', '/runs', h.t.acmeRunner, { repo: h.acmeRepo, goal: 'fix it', ...extra });
    let r = await start({ model: SCRIPT, review: 'on', reviewModel: 'scripted:/etc/passwd' });
    expect(r.status).toBe(403);
    expect(await json(r)).toMatchObject({ error: 'model_not_allowed', field: 'reviewModel' });
    r = await start({ model: SCRIPT, attempts: 2, attemptModels: [SCRIPT, 'claude-opus-4-1'] });
    expect(await json(r)).toMatchObject({ error: 'model_not_allowed', field: 'attemptModels' });
    mkdirSync(join(h.acmeRepo, '.kiln'), { recursive: true });
    writeFileSync(join(h.acmeRepo, '.kiln', 'config'), JSON.stringify({ model: 'claude-opus-4-1', reviewModel: 'claude-opus-4-1' }));
    // the server could call the model: only the tenant's list stands in the way
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-test');
    onTestFinished(() => void vi.unstubAllEnvs());
    r = await start({});
    expect(r.status).toBe(403);
    const body = await json(r);
    expect(body).toMatchObject({ error: 'model_not_allowed', field: 'model' });
    expect(String(body.message)).toMatch(/not claude-opus-4-1 \(named by the repo's \.kiln\/config/);
    r = await start({ model: SCRIPT, review: 'on' });
    expect(await json(r)).toMatchObject({ error: 'model_not_allowed', field: 'reviewModel' });
  });
});
