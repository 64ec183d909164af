/**
 * Fleet queries on the real dev server: a run keeps its search attributes current (files touched,
 * who approved, budget share, waiting since), and `kiln list`'s filters find it through the
 * visibility store — and do not find a run that does not match.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetQuery, type FleetFilters } from '../../src/client/fleet-query.js';
import { approveSignal } from '../../src/shared/messages.js';
import type { RunInput } from '../../src/shared/types.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { signRunStart } from '../../src/auth/attestation.js';
import { TemporalBackend } from '../../src/server/temporal-backend.js';
import { join } from 'node:path';

let t: WorkflowTestEnv;

beforeAll(async () => {
  t = await workflowTestEnv('kiln-fleet-tests');
});

afterAll(async () => {
  await t?.stop();
});

/** the run ids a filter finds, once the visibility store has caught up with `want` */
async function found(f: FleetFilters, want: (ids: string[]) => boolean): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ids: string[] = [];
    for await (const w of t.env.client.workflow.list({ query: fleetQuery(f) })) ids.push(w.workflowId);
    if (want(ids) || Date.now() > deadline) return ids;
    await new Promise((r) => setTimeout(r, 300));
  }
}

function asking(repo: string): string {
  return writeScript(join(repo, '..'), 'fleet', {
    steps: [
      { tool_use: [{ name: 'edit', input: { path: 'src/auth.ts', old_string: 'one', new_string: 'two' } }] },
      { tool_use: [{ name: 'run_command', input: { command: 'mytool lint', reason: 'the team linter' } }] },
      { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
    ],
  });
}

describe("fleet queries over Kiln's search attributes", () => {
  it('a waiting run is found by phase, repo, path and waiting time; after approval, by its approver', async () => {
    const repo = repoWith({ 'src/auth.ts': 'one\n' });
    const other = repoWith({ 'src/auth.ts': 'one\n' });
    const input: RunInput = testInput({
      repo,
      model: `scripted:${asking(repo)}`,
      searchAttributes: true,
      allowUnverified: true,
      budgets: { maxTurns: 4, maxTokens: 5_000_000, maxUsd: 100, maxWallMs: 30 * 60_000 },
    });
    const h = await t.start(input);
    const st = await t.waitFor(h, (s) => s.pendingApprovals.length > 0);
    const id = h.workflowId;
    const has = (ids: string[]) => ids.includes(id);

    expect(await found({ phase: 'awaiting_approval', repo, touched: 'src/auth.ts' }, has)).toContain(id);
    // two of four turns used: at least half a budget
    expect(await found({ overBudget: '50%', repo }, has)).toContain(id);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await found({ waitingLongerThan: '1s', repo }, has)).toContain(id);
    // the controls: same filters, one value off (asked once: the record is indexed by now)
    expect(await found({ phase: 'awaiting_approval', repo: other }, () => true)).not.toContain(id);
    expect(await found({ touched: 'src/other.ts', repo }, () => true)).not.toContain(id);
    expect(await found({ waitingLongerThan: '1h', repo }, () => true)).not.toContain(id);
    expect(await found({ overBudget: '90%', repo }, () => true)).not.toContain(id);

    await h.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: true, by: 'ana' });
    expect((await h.result()).state).toBe('succeeded');
    expect(await found({ approver: 'ana', repo }, has)).toContain(id);
    expect(await found({ approver: 'bob', repo }, () => true)).not.toContain(id);
    // nothing waits any more
    expect(await found({ waitingLongerThan: '1s', repo }, (ids) => !ids.includes(id))).not.toContain(id);
    expect(await found({ phase: 'succeeded', repo }, has)).toContain(id);
  });
});

describe('continue-as-new keeps what kiln serve set at start', () => {
  it("a run started through kiln serve keeps its KilnTenant attribute and its memo after continuing as new; the tenant's list still finds it", async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'continued', {
      steps: [
        { tool_use: [{ name: 'read_file', input: { path: 'a.txt' } }] },
        { tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'a', new_string: 'b' } }] },
        { tool_use: [{ name: 'read_file', input: { path: 'a.txt' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, searchAttributes: true, allowUnverified: true, turnsPerRun: 1 });
    const key = randomBytes(32);
    const backend = new TemporalBackend(t.env.client, 'kiln-fleet-tests', key);
    const memo = { startedBy: 'alice', bodyHash: 'a'.repeat(64), maxUsd: 5 };
    const started = await backend.start(input, 'acme', memo);
    // as kiln serve does: the start signed for the execution Temporal named, which is where tenant and repo come from
    const execution = started.execution!;
    const claim = { execution, runId: input.runId, repo: input.repo, user: 'alice', tenant: 'acme', issuedAt: new Date().toISOString() };
    await backend.attestStart(input.runId, execution, signRunStart(key, claim));
    const r = await backend.result(input.runId);
    expect(r?.state, r?.reason).toBe('succeeded');
    // the run really continued: several executions under one workflow id
    const executions: string[] = [];
    for await (const w of t.env.client.workflow.list({ query: `WorkflowId = '${input.runId}'` })) executions.push(w.status.name);
    expect(executions.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    const now = await backend.describe(input.runId);
    expect(now).toMatchObject({ tenant: 'acme', memo, status: 'COMPLETED', repo });
    // the tenant's list finds the last execution; another tenant's does not
    const deadline = Date.now() + 30_000;
    let listed = await backend.list({ tenant: 'acme' });
    while (!listed.some((i) => i.runId === input.runId) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 300));
      listed = await backend.list({ tenant: 'acme' });
    }
    expect(listed.filter((i) => i.runId === input.runId)).toEqual([expect.objectContaining({ tenant: 'acme', memo, status: 'COMPLETED' })]);
    expect((await backend.list({ tenant: 'other' })).some((i) => i.runId === input.runId)).toBe(false);
  });
});
