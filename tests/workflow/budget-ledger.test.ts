/**
 * The budget ledger on the real dev server: an in-process worker with real activities, and the
 * fault server playing the model (it records what it served). The ledger is the tenant's workflow;
 * each test counts against its own repo's scope.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelClient } from '../../src/model/index.js';
import { startFaultServer, type FaultReply, type FaultServer } from '../../src/model/fault-server.js';
import { approveUpdate } from '../../src/shared/messages.js';
import { DEFAULT_TENANT, ledgerWorkflowId, type LedgerView } from '../../src/shared/budget-ledger.js';
import { budgetView, setBudgetLimit } from '../../src/client/budget.js';
import { outcome } from '../../src/client/runs.js';
import { recordOpen, workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { repoWith } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { servedTotal } from '../helpers/ledger.js';

const QUEUE = 'kiln-budget-tests';
let t: WorkflowTestEnv;
let api: FaultServer;

beforeAll(async () => {
  api = await startFaultServer();
  const env = { ANTHROPIC_API_KEY: 'sk-fault', ANTHROPIC_BASE_URL: api.url };
  t = await workflowTestEnv(QUEUE, { model: (spec, runId) => createModelClient({ spec, runId, env }) });
});
beforeEach(() => {
  api.clear();
  api.setDefault({ fault: 'status', status: 400, type: 'invalid_request_error', message: 'the test queued no more answers' });
});
afterAll(async () => {
  if (t) await recordOpen(t.env.client.workflow.getHandle(ledgerWorkflowId(DEFAULT_TENANT)), 'budget-ledger');
  await t?.stop();
  await api?.close();
});

const MODEL = 'claude-sonnet-4-6';
const reply = (name: string, input: unknown, usage?: FaultReply['usage']): FaultReply => ({
  content: [{ type: 'tool_use', name, input }],
  ...(usage ? { usage } : {}),
});
function addsB(): void {
  api.push(
    reply('create_file', { path: 'b.txt', content: 'b\n' }),
    reply('run_command', { command: 'test -f b.txt', reason: 'the check' }),
    reply('finish', { summary: 'done' }),
  );
}
const limit = (repo: string, tokens: number) =>
  setBudgetLimit(t.env.client, DEFAULT_TENANT, { scope: 'repo', name: repo, limit: { tokens }, by: 'operator' }, QUEUE);
const scopeOf = (v: LedgerView | undefined, scope: string) => v?.scopes.find((s) => s.scope === scope);
/** The run parked, with what its next call needs; the model was asked `asked` times by then. */
async function parked(h: RunHandle, after?: string): Promise<{ need: number; approvalId: string }> {
  const st = await t.waitFor(h, (s) => s.phase === 'awaiting_budget' && s.pendingApprovals.length > 0 && s.pendingApprovals[0]!.id !== after);
  const ap = st.pendingApprovals[0]!;
  expect(ap.reason).toMatch(/short by \d+ tokens.*kiln budget set/);
  return { need: Number(/needs (\d+) tokens/.exec(ap.summary)![1]), approvalId: ap.id };
}
const approve = (h: RunHandle, approvalId: string) => h.executeUpdate(approveUpdate, { args: [{ approvalId, approve: true, by: 'alice' }] });

describe('the budget ledger', () => {
  it('parks before the call that would cross a limit (the model never sees it); raising the limit and approving lets the run finish; the ledger equals what was served', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    await limit(repo, 1);
    addsB();
    const before = api.requests.length;
    const mine = () => api.requests.slice(before);
    const h = await t.start(testInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 }));
    const first = await parked(h);
    expect(mine()).toHaveLength(0);
    // room for exactly the first call's worst case and a little: the second, billed on top of the first, does not fit
    await limit(repo, first.need + 50);
    await approve(h, first.approvalId);
    const second = await parked(h, first.approvalId);
    expect(mine()).toHaveLength(1);
    const view = await budgetView(t.env.client, DEFAULT_TENANT);
    const used = scopeOf(view, `repo:${repo}`)!;
    expect(used.used.input + used.used.output + used.held.tokens + second.need).toBeGreaterThan(first.need + 50);
    await limit(repo, 10_000_000);
    await approve(h, second.approvalId);
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(mine()).toHaveLength(3);
    const end = scopeOf(await budgetView(t.env.client, DEFAULT_TENANT), `repo:${repo}`)!;
    expect({ input: end.used.input, output: end.used.output }).toEqual(servedTotal(mine()));
    expect(end.held.calls).toBe(0);
    expect(end.used.input).toBe(r.tokens.input);
  });

  it('a reply billed over its reservation is counted as billed; the next call parks, and a rejection ends the run blocked with nothing held', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    await limit(repo, 55_000);
    api.push(reply('read_file', { path: 'a.txt' }, { input_tokens: 50_000, output_tokens: 20 }));
    addsB();
    const before = api.requests.length;
    const h = await t.start(testInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 }));
    const { approvalId } = await parked(h);
    expect(api.requests.slice(before)).toHaveLength(1);
    await h.executeUpdate(approveUpdate, { args: [{ approvalId, approve: false, by: 'alice', reason: 'too dear' }] });
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/budget exhausted: repo:.* tokens \(55000\): alice rejected/);
    const view = await budgetView(t.env.client, DEFAULT_TENANT);
    expect(view!.overruns).toBeGreaterThanOrEqual(1);
    const end = scopeOf(view, `repo:${repo}`)!;
    expect({ input: end.used.input, output: end.used.output }).toEqual({ input: 50_000, output: 20 });
    expect(end.held.calls).toBe(0);
  });

  it('a call that failed unbilled holds nothing and counts nothing', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    await limit(repo, 1_000_000);
    api.push({ fault: 'status', status: 400, type: 'invalid_request_error', message: 'bad request' });
    const before = api.requests.length;
    const h = await t.start(testInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 }));
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    const mine = api.requests.slice(before);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((q) => !q.served)).toBe(true);
    const end = scopeOf(await budgetView(t.env.client, DEFAULT_TENANT), `repo:${repo}`)!;
    expect(end.used).toMatchObject({ input: 0, output: 0 });
    expect(end.held.calls).toBe(0);
  });

  it("two attempts racing for the parallel run's last tokens: the ledger lets one call out, the other attempt parks on the parent's cap and is cancelled when the first wins", async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    addsB();
    const before = api.requests.length;
    // the run's budget is the cap over both attempts: a first call's worst case (its input and the output
    // left within the budget) takes all of it
    const input = testInput({
      repo,
      model: MODEL,
      checks: ['test -f b.txt'],
      maxAttempts: 1,
      attempts: 2,
      budgets: { maxTurns: 40, maxTokens: 6000, maxUsd: 100, maxWallMs: 30 * 60_000 },
    });
    const h = await t.start(input);
    const kids = [1, 2].map((i) => t.env.client.workflow.getHandle(`${input.runId}-a${i}`) as RunHandle);
    const deadline = Date.now() + 60_000;
    let waiting: string | undefined;
    while (!waiting) {
      if (Date.now() > deadline) throw new Error('no attempt parked on the parent cap');
      for (const k of kids) {
        const st = (await k.query('status').catch(() => undefined)) as { phase: string; pendingApprovals: Array<{ summary: string }> } | undefined;
        if (st?.phase === 'awaiting_budget') {
          expect(st.pendingApprovals[0]!.summary).toContain(`budget parent:${input.runId}`);
          waiting = k.workflowId;
        }
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    const winner = kids.find((k) => k.workflowId !== waiting)!.workflowId;
    expect(r.patchPath).toContain(winner);
    expect((await t.env.client.workflow.getHandle(waiting).describe()).status.name).toBe('CANCELLED');
    const mine = api.requests.slice(before);
    expect(mine).toHaveLength(3);
    const parent = scopeOf(await budgetView(t.env.client, DEFAULT_TENANT), `parent:${input.runId}`)!;
    expect({ input: parent.used.input, output: parent.used.output }).toEqual(servedTotal(mine));
    expect(parent.limit).toEqual({ tokens: 6000, usd: 100 });
    expect(parent.held.calls).toBe(0);
  });

  it('far from every limit the calls spend a lease: no call reserves on its own, a grant covers several calls, replies are told together and every one counts, and nothing stays held', async () => {
    const repo = repoWith({ 'a.txt': 'one\n' });
    await limit(repo, 10_000_000);
    api.push(
      reply('run_command', { command: 'cat a.txt', reason: 'look' }),
      reply('run_command', { command: 'ls', reason: 'look' }),
      reply('run_command', { command: 'wc -l a.txt', reason: 'look' }),
      reply('create_file', { path: 'b.txt', content: 'b\n' }),
      reply('run_command', { command: 'test -f b.txt', reason: 'the check' }),
      reply('finish', { summary: 'done' }),
    );
    const ledger = t.env.client.workflow.getHandle(ledgerWorkflowId(DEFAULT_TENANT));
    const updates = async () => {
      const names: string[] = [];
      for (const e of (await ledger.fetchHistory()).events ?? [])
        if (e.workflowExecutionUpdateAcceptedEventAttributes) names.push(e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest!.input!.name!);
      return names;
    };
    const before = (await updates()).length;
    const served = api.requests.length;
    const r = await outcome(await t.start(testInput({ repo, model: MODEL, checks: ['test -f b.txt'], maxAttempts: 1 })));
    expect(r.state).toBe('succeeded');
    const calls = api.requests.length - served;
    expect(calls).toBe(6);
    const mine = (await updates()).slice(before);
    const count = (n: string) => mine.filter((m) => m === n).length;
    expect(count('budgetReserve')).toBe(0);
    // the replies are told together, or with a grant: fewer updates than replies, and every one counted (below)
    expect(count('budgetSettle') + count('budgetSettleMany')).toBeLessThan(calls);
    expect(count('budgetLease')).toBeGreaterThan(0);
    expect(count('budgetLease')).toBeLessThan(calls);
    const end = scopeOf(await budgetView(t.env.client, DEFAULT_TENANT), `repo:${repo}`)!;
    expect({ input: end.used.input, output: end.used.output }).toEqual(servedTotal(api.requests.slice(served)));
    expect(end.held.calls).toBe(0);
  });
});
