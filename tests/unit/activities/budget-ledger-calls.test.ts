/**
 * The turn activity's side of the budget ledger, with a fake ledger in the deps: the reservation
 * before the call (the model is not asked when it does not fit), the settle of each billed reply,
 * the release of a call that failed unbilled, and a retried activity settling again what its
 * killed attempt was billed for.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BudgetLedgerPort } from '../../../src/activities/budget.js';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { MODEL_LEDGER_FILE } from '../../../src/activities/ledgered-call.js';
import type { LeaseRequest, ReserveAnswer, ReserveRequest, SettleRequest } from '../../../src/shared/budget-ledger.js';
import type { LedgerRef } from '../../../src/shared/contracts.js';
import { runDir } from '../../../src/store/run-files.js';
import { repoWith, writeScript } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const REF: LedgerRef = { tenant: 'acme', taskQueue: 'q' };

function fakeLedger(answer: ReserveAnswer = { ok: true }, leases = false) {
  const seen = { reserved: [] as ReserveRequest[], leased: [] as LeaseRequest[], settled: [] as SettleRequest[], released: [] as string[] };
  const port: BudgetLedgerPort = {
    reserve: async (_ref, r) => {
      seen.reserved.push(r);
      return answer;
    },
    ...(leases
      ? {
          lease: async (_ref: LedgerRef, r: LeaseRequest) => {
            seen.leased.push(r);
            // far from the limit only the exact grant fits
            return r.spare ? { ok: false as const, over: { scope: 'tenant', limit: 'usd' as const, max: 1, used: 0, held: 0, need: 1 } } : answer;
          },
        }
      : {}),
    settle: async (_ref, s) => void seen.settled.push(s),
    release: async (_ref, k) => void seen.released.push(k),
  };
  return { port, seen };
}

async function prepared(steps: unknown[], ledger: BudgetLedgerPort) {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: `scripted:${writeScript(join(repo, '..'), 's', { steps })}` });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', ledger });
  await new MockActivityEnvironment().run(acts.prepareWorkspace, input);
  return { repo, input, acts };
}

describe("the turn's model call and the budget ledger", () => {
  it("reserves the call's worst case before it is sent, and settles the billed reply with what it cost", async () => {
    const { port, seen } = fakeLedger();
    const { repo, input, acts } = await prepared([{ text: 'done' }], port);
    const res = await new MockActivityEnvironment().run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF });
    expect(res.text).toBe('done');
    expect(seen.reserved).toHaveLength(1);
    const r = seen.reserved[0]!;
    expect(r).toMatchObject({ key: `${input.runId}:1:1`, runId: input.runId, repo });
    // the output limit is all reserved, beside the input
    expect(r.tokens).toBeGreaterThan(input.maxTokens);
    expect(seen.settled).toHaveLength(1);
    expect(seen.settled[0]).toMatchObject({ key: r.key, usage: res.usage });
    expect(seen.settled[0]!.usd).toBeCloseTo(res.costUsd, 6);
  });

  it('a call that does not fit is not sent: the turn hands back what is over, and the scripted model is never asked', async () => {
    const over = { scope: 'tenant', limit: 'usd' as const, max: 1, used: 1, held: 0, need: 0.1 };
    const { port, seen } = fakeLedger({ ok: false, over });
    const { repo, input, acts } = await prepared([{ text: 'never said' }], port);
    const res = await new MockActivityEnvironment().run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF });
    expect(res).toMatchObject({ calls: [], overBudget: over, usage: { input: 0, output: 0 } });
    expect(seen.settled).toHaveLength(0);
    // the cost ledger says why, and has no answer: nothing was sent
    const lines = readFileSync(join(runDir(repo, input.runId), MODEL_LEDGER_FILE), 'utf8');
    expect(lines).toContain('"over_budget"');
    expect(lines).not.toContain('"answered"');
  });

  it('a call that failed unbilled lets its reservation go', async () => {
    const { port, seen } = fakeLedger();
    const { repo, input, acts } = await prepared([{ error: { status: 400, message: 'bad request', times: 'always' } }], port);
    await expect(new MockActivityEnvironment().run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF })).rejects.toThrow();
    expect(seen.released).toEqual([`${input.runId}:1:1`]);
    expect(seen.settled).toHaveLength(0);
  });

  it('a retried activity settles again the reply its killed attempt was billed for, before it reserves; a line cut by the kill is skipped', async () => {
    const { port, seen } = fakeLedger();
    const { repo, input, acts } = await prepared([{ text: 'done' }], port);
    const file = join(runDir(repo, input.runId), MODEL_LEDGER_FILE);
    const billed = {
      call: `${input.runId}:1:1`,
      event: 'billed',
      message: 'msg_killed',
      usage: { input: 7, output: 3, cacheRead: 0, cacheWrite: 0 },
      costUsd: 0.001,
    };
    appendFileSync(file, `${JSON.stringify(billed)}\n{"call":"${input.runId}:1:1","event":"billed","mess`);
    appendFileSync(file, '\n');
    const res = await new MockActivityEnvironment({ attempt: 2 }).run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF });
    expect(res.text).toBe('done');
    expect(seen.settled.map((s) => s.message)).toEqual(['msg_killed', expect.any(String)]);
    expect(seen.settled[0]).toMatchObject({ usage: billed.usage, usd: 0.001 });
    expect(seen.reserved).toHaveLength(1);
  });

  it("with a ledger that leases: the call's worst case comes from the activity's lease, its reply settles against it, and the lease goes back when the turn ends", async () => {
    const { port, seen } = fakeLedger({ ok: true }, true);
    const { repo, input, acts } = await prepared([{ text: 'done' }], port);
    const res = await new MockActivityEnvironment().run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF });
    expect(res.text).toBe('done');
    expect(seen.reserved).toHaveLength(0);
    // asked ahead first (refused near the limit here), then exactly the call's worst case
    expect(seen.leased.map((l) => [l.grant, Boolean(l.spare)])).toEqual([
      [1, true],
      [2, false],
    ]);
    const grant = seen.leased[1]!;
    expect(grant.key).toMatch(new RegExp(`^lease:${input.runId}:1:`));
    expect(grant.tokens).toBeGreaterThan(input.maxTokens);
    expect(seen.settled).toHaveLength(1);
    expect(seen.settled[0]).toMatchObject({
      key: `${input.runId}:1:1`,
      usage: res.usage,
      lease: { key: grant.key, frees: { tokens: grant.tokens, usd: grant.usd } },
    });
    expect(seen.released).toEqual([grant.key]);
  });

  it('with a ledger that leases, a call that does not fit is not sent, and the refusal names the whole call', async () => {
    const over = { scope: 'tenant', limit: 'usd' as const, max: 1, used: 1, held: 0, need: 0.1 };
    const { port, seen } = fakeLedger({ ok: false, over }, true);
    const { repo, input, acts } = await prepared([{ text: 'never said' }], port);
    const res = await new MockActivityEnvironment().run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, ledger: REF });
    expect(res).toMatchObject({ calls: [], overBudget: { scope: 'tenant', limit: 'usd', max: 1, used: 1 }, usage: { input: 0, output: 0 } });
    expect(res.overBudget!.need).toBe(seen.leased[1]!.usd);
    expect(seen.settled).toHaveLength(0);
  });
});
