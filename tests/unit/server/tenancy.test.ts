/**
 * Every route, called with another tenant's token on a run that exists: a 404 exactly like a run
 * that does not exist (ids do not leak), and nothing reaches the run. Each next to its control:
 * the owning tenant's token gets through.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { harness } from './harness.js';

let h: ReturnType<typeof harness>;
const RUN = 'run-acme-1';

beforeEach(() => {
  h = harness();
  h.backend.add(RUN, 'acme', { repo: h.acmeRepo, memo: { startedBy: 'alice' } });
  // a run started outside `kiln serve` (no tenant): nobody's through the API
  h.backend.add('run-cli-1', undefined, { repo: h.acmeRepo });
  const dir = join(h.acmeRepo, '.kiln', 'runs', RUN);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'patch.diff'), '--- a/x\n+++ b/x\n');
  writeFileSync(join(dir, 'verdict.json'), '{"pass":true}');
});

const ROUTES: Array<{
  name: string;
  method: string;
  path: string;
  body?: unknown;
  owner: 'acmeRunner' | 'acmeApprover';
  other: 'globexRunner' | 'globexApprover';
  ok: number;
}> = [
  { name: 'GET /runs/:id', method: 'GET', path: `/runs/${RUN}`, owner: 'acmeRunner', other: 'globexRunner', ok: 200 },
  { name: 'POST /runs/:id/cancel', method: 'POST', path: `/runs/${RUN}/cancel`, body: { reason: 'x' }, owner: 'acmeRunner', other: 'globexRunner', ok: 202 },
  { name: 'GET /runs/:id/patch', method: 'GET', path: `/runs/${RUN}/patch`, owner: 'acmeRunner', other: 'globexRunner', ok: 200 },
  { name: 'GET /runs/:id/artifacts', method: 'GET', path: `/runs/${RUN}/artifacts`, owner: 'acmeRunner', other: 'globexRunner', ok: 200 },
  { name: 'GET /runs/:id/artifacts/:name', method: 'GET', path: `/runs/${RUN}/artifacts/verdict.json`, owner: 'acmeRunner', other: 'globexRunner', ok: 200 },
  {
    name: 'POST /runs/:id/approvals/:approvalId',
    method: 'POST',
    path: `/runs/${RUN}/approvals/appr-1`,
    body: { decision: 'approve' },
    owner: 'acmeApprover',
    other: 'globexApprover',
    ok: 200,
  },
  {
    name: 'POST /runs/:id/human',
    method: 'POST',
    path: `/runs/${RUN}/human`,
    body: { action: 'hint', text: 'try X' },
    owner: 'acmeApprover',
    other: 'globexApprover',
    ok: 200,
  },
];

describe('cross-tenant: every run route is a 404 for another tenant', () => {
  for (const r of ROUTES) {
    it(`${r.name}: another tenant gets the same 404 as a missing run; the owner gets ${r.ok}`, async () => {
      const other = await h.call(r.method, r.path, h.t[r.other], r.body);
      expect(other.status).toBe(404);
      const missing = await h.call(r.method, r.path.replace(RUN, 'run-nope'), h.t[r.other], r.body);
      expect(missing.status).toBe(404);
      // same shape, only the id differs: nothing tells "exists elsewhere" from "does not exist"
      expect(JSON.stringify(await other.json()).replace(RUN, 'ID')).toBe(JSON.stringify(await missing.json()).replace('run-nope', 'ID'));
      // a run with no tenant (started by the CLI) is nobody's through the API
      expect((await h.call(r.method, r.path.replace(RUN, 'run-cli-1'), h.t[r.owner], r.body)).status).toBe(404);
      expect(h.backend.decisions.length + h.backend.humans.length + h.backend.cancels.length).toBe(0);

      const own = await h.call(r.method, r.path, h.t[r.owner], r.body);
      expect(own.status).toBe(r.ok);
    });
  }

  it('GET /runs/:id/events: another tenant gets 404 and no stream; the owner gets the stream', async () => {
    const other = await h.call('GET', `/runs/${RUN}/events`, h.t.globexRunner);
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toContain('application/json');
    h.backend.close(RUN);
    const own = await h.call('GET', `/runs/${RUN}/events`, h.t.acmeRunner);
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toContain('text/event-stream');
    expect(await own.text()).toContain('event: end');
  });

  it("GET /budget shows the caller's tenant's ledger only; no token, whatever its role, may raise a limit", async () => {
    const view = (tenant: string, usd: number) => ({
      tenant,
      day: '2026-12-07',
      open: 0,
      overruns: 0,
      scopes: [{ scope: 'tenant', used: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, usd }, held: { tokens: 0, usd: 0, calls: 0 }, limit: { usd: 1 } }],
    });
    h.backend.ledgers.set('acme', view('acme', 0.5));
    h.backend.ledgers.set('globex', view('globex', 0.9));
    const a = (await (await h.call('GET', '/budget', h.t.acmeViewer)).json()) as { tenant: string; scopes: Array<{ used: { usd: number } }> };
    expect(a.tenant).toBe('acme');
    expect(a.scopes[0]!.used.usd).toBe(0.5);
    expect(((await (await h.call('GET', '/budget', h.t.globexRunner)).json()) as { tenant: string }).tenant).toBe('globex');
    for (const token of [h.t.acmeRunner, h.t.acmeApprover, h.t.acmeViewer])
      for (const method of ['PUT', 'POST', 'PATCH']) {
        const r = await h.call(method, '/budget', token, { scope: 'tenant', limit: { usd: 1000 } });
        expect(r.status).toBe(403);
        expect(((await r.json()) as { message: string }).message).toMatch(/set by the operator/);
      }
    expect((await h.call('GET', '/budget')).status).toBe(401);
  });

  it("GET /runs lists only the caller's tenant's runs", async () => {
    h.backend.add('run-globex-1', 'globex', { repo: h.globexRepo });
    const g = (await (await h.call('GET', '/runs', h.t.globexRunner)).json()) as { runs: Array<{ runId: string }> };
    expect(g.runs.map((r) => r.runId)).toEqual(['run-globex-1']);
    const a = (await (await h.call('GET', '/runs', h.t.acmeRunner)).json()) as { runs: Array<{ runId: string }> };
    expect(a.runs.map((r) => r.runId)).toEqual([RUN]);
  });

  it("GET /approvals shows only the caller's tenant's pending approvals and runs that need a person", async () => {
    h.backend.add('run-acme-stuck', 'acme', {
      repo: h.acmeRepo,
      state: { phase: 'needs_human', reason: 'checks fail the same way twice', pendingApprovals: [] },
    });
    const g = (await (await h.call('GET', '/approvals', h.t.globexApprover)).json()) as { approvals: unknown[]; needsHuman: unknown[] };
    expect(g.approvals).toEqual([]);
    expect(g.needsHuman).toEqual([]);
    const stuck = (await (await h.call('GET', '/approvals', h.t.acmeViewer)).json()) as { needsHuman: Array<{ runId: string; reason: string }> };
    expect(stuck.needsHuman).toMatchObject([{ runId: 'run-acme-stuck', reason: 'checks fail the same way twice' }]);
    const a = (await (await h.call('GET', '/approvals', h.t.acmeApprover)).json()) as { approvals: Array<{ runId: string; approval: { id: string } }> };
    expect(a.approvals.map((x) => `${x.runId}/${x.approval.id}`)).toEqual([`${RUN}/appr-1`]);
  });

  it("POST /runs: another tenant's repo is refused (403); the same Idempotency-Key in two tenants makes two runs", async () => {
    const body = { repo: h.acmeRepo, goal: 'fix it', model: 'scripted:examples/scripts/revoked-session.json' };
    const stolen = await h.call('POST', '/runs', h.t.globexRunner, body);
    expect(stolen.status).toBe(403);
    expect(((await stolen.json()) as { message: string }).message).toMatch(/may not start runs on/);
    const a = (await (await h.call('POST', '/runs', h.t.acmeRunner, body, { 'Idempotency-Key': 'k1' })).json()) as { runId: string };
    const g = (await (await h.call('POST', '/runs', h.t.globexRunner, { ...body, repo: h.globexRepo }, { 'Idempotency-Key': 'k1' })).json()) as {
      runId: string;
    };
    expect(a.runId).not.toBe(g.runId);
    expect(h.backend.runs.get(g.runId)!.info.tenant).toBe('globex');
  });
});
