/**
 * The attacks on identity and approvals, end to end against the real dev server and the real
 * `kiln serve` routes (createApp over TemporalBackend): a party with only the gRPC port replays a
 * finished run's signed start and approvals into a new execution under the same run id, copies a
 * pre-approval's os-user tag onto another command, or moves a run to another tenant; the person
 * who started a run approves it with a second token. Each next to the genuine flow it imitates.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signApproval } from '../../src/auth/attestation.js';
import { approverFor } from '../../src/client/signed-approver.js';
import { outcome, startInput } from '../../src/client/runs.js';
import { createApp } from '../../src/server/app.js';
import { canonicalPath, type TenantConfig } from '../../src/server/tenants.js';
import { TemporalBackend } from '../../src/server/temporal-backend.js';
import { TokenStore } from '../../src/server/tokens.js';
import { approveSignal, approveUpdate, preApproveUpdate, startedBySignal } from '../../src/shared/messages.js';
import type { ApprovalDecision, RunInput, StartAttestation } from '../../src/shared/types.js';
import { KilnTenant } from '../../src/shared/search-attributes.js';
import { repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { saveHistory, workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

const QUEUE = 'kiln-trust-tests';
const key = randomBytes(32);
const workerEnv = { ...process.env, KILN_APPROVAL_KEY: key.toString('hex') };
let t: WorkflowTestEnv;
const tenants = new Map<string, TenantConfig>();
let app: ReturnType<typeof createApp>;
const tok: Record<string, string> = {};

beforeAll(async () => {
  testKilnHome();
  t = await workflowTestEnv(QUEUE, { env: workerEnv });
  const tokens = new TokenStore(join(mkdtempSync(join(tmpdir(), 'kiln-trust-tokens-')), 'tokens.json'));
  app = createApp({
    backend: new TemporalBackend(t.env.client, QUEUE, key),
    tokens,
    tenants: () => tenants,
    approvalKey: key,
    pollMs: 50,
    allowScriptedModels: true,
  });
  for (const [name, tenant, user, role] of [
    ['aliceRuns', 'acme', 'alice', 'runner'],
    // the same person's second token: an approver one
    ['aliceApproves', 'acme', 'alice', 'approver'],
    ['bob', 'acme', 'bob', 'approver'],
    ['bob2', 'acme', 'bob', 'approver'],
    ['carol', 'acme', 'carol', 'approver'],
    ['eve', 'evil', 'eve', 'approver'],
  ] as const)
    tok[name] = tokens.create({ tenant, user, role }).token;
});
afterAll(async () => {
  await t?.stop();
});

const call = async (method: string, path: string, token: string, body?: unknown) => {
  const r = await app.request(path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.text()).trim() };
};

function allow(tenant: string, repo: string): void {
  const cfg: TenantConfig = tenants.get(tenant) ?? { repos: [], maxConcurrentRuns: 20, usdPerDay: 1000, requestsPerMinute: 10_000 };
  tenants.set(tenant, { ...cfg, repos: [...cfg.repos, canonicalPath(repo)] });
}

/** A run started through kiln serve's POST /runs by alice of acme. */
async function startThroughServe(repo: string, script: string): Promise<RunHandle> {
  allow('acme', repo);
  const r = await call('POST', '/runs', tok.aliceRuns!, { repo, goal: 'check the build tool', model: `scripted:${script}`, unverified: true });
  expect(r.status, r.body).toBe(201);
  return t.env.client.workflow.getHandle((JSON.parse(r.body) as { runId: string }).runId);
}

const approveVia = (token: string, runId: string, approvalId = 'ap-1') =>
  call('POST', `/runs/${runId}/approvals/${approvalId}`, token, { decision: 'approve' });

function auditOf(artifactsDir: string): Array<Record<string, unknown>> {
  return readFileSync(join(artifactsDir, 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** What anyone who can read the run's history gets: the server's signed start and every decision sent, as sent. */
async function capturedFrom(handle: RunHandle): Promise<{ start: StartAttestation; decisions: ApprovalDecision[] }> {
  const history = await handle.fetchHistory();
  let start: StartAttestation | undefined;
  const decisions: ApprovalDecision[] = [];
  for (const e of history.events ?? []) {
    const sig = e.workflowExecutionSignaledEventAttributes;
    if (sig?.signalName === startedBySignal.name) start = defaultPayloadConverter.fromPayload<StartAttestation>(sig.input!.payloads![0]!);
    // kiln serve sends a decision as an Update, or as a Signal of the same name when no worker answers in time
    if (sig?.signalName === approveSignal.name) decisions.push(defaultPayloadConverter.fromPayload<ApprovalDecision>(sig.input!.payloads![0]!));
    const upd = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    if (upd?.input?.name === approveUpdate.name) decisions.push(defaultPayloadConverter.fromPayload<ApprovalDecision>(upd.input.args!.payloads![0]!));
  }
  return { start: start!, decisions };
}

const TWO_PERSON = JSON.stringify({ approvals: { twoPerson: ['command:make*'] } });

/** A repo whose policy wants two people for make, and a script that runs `make --version` (asked), then adds MAKE.md and finishes. */
function makeVersionRepo(): { repo: string; script: string } {
  const repo = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': TWO_PERSON });
  const script = writeScript(join(repo, '..'), 'make-version', {
    steps: [
      { tool_use: [{ name: 'run_command', input: { command: 'make --version', reason: 'which make' } }] },
      {
        tool_use: [
          { name: 'create_file', input: { path: 'MAKE.md', content: 'make checked\n' } },
          { name: 'finish', input: { summary: 'checked' } },
        ],
      },
    ],
  });
  return { repo, script };
}

describe('two-person approval through kiln serve, and its signatures replayed', () => {
  it('control: two approvers other than the starter run the call; the starter (second token) and a repeated approver do not count', async () => {
    const { repo, script } = makeVersionRepo();
    const handle = await startThroughServe(repo, script);
    const runId = handle.workflowId;
    await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);

    // alice started the run; with her approver token she is still alice: not one of the two
    expect((await approveVia(tok.aliceApproves!, runId)).status).toBe(200);
    await t.waitFor(handle, (s) => s.log.some((l) => l.text.includes('by alice does not count: they started the run')));
    expect((await approveVia(tok.bob!, runId)).status).toBe(200);
    await t.waitFor(handle, (s) => s.pendingApprovals[0]?.approvals?.by.length === 1);
    // bob's second token is bob
    expect((await approveVia(tok.bob2!, runId)).status).toBe(200);
    const one = await t.waitFor(handle, (s) => s.log.some((l) => l.text.includes('the same person counts once')));
    expect(one.pendingApprovals[0]?.approvals?.by).toEqual(['bob']);
    expect(one.phase).toBe('awaiting_approval');
    // a signature kiln serve made for a user of another tenant (it never would for this run) does not count either
    const st = await t.waitFor(handle, () => true);
    const execution = (await handle.describe()).raw.workflowExecutionInfo!.firstRunId!;
    const foreign = signApproval(key, {
      execution,
      runId,
      approvalId: 'ap-1',
      call: st.pendingApprovals[0]!.hash!,
      approve: true,
      scope: 'once',
      user: 'gus',
      tenant: 'globex',
      issuedAt: new Date().toISOString(),
    });
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true, scope: 'once', by: 'gus', attestation: foreign }] });
    await t.waitFor(handle, (s) => s.log.some((l) => l.text.includes('they are of tenant globex, the run of tenant acme')));
    expect((await approveVia(tok.carol!, runId)).status).toBe(200);

    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    if (process.env.KILN_RECORD_HISTORIES) await saveHistory(handle, process.env.KILN_RECORD_HISTORIES, (await startInput(handle))!);
    const audit = auditOf(r.artifactsDir);
    expect(audit[0]).toMatchObject({ kind: 'start', by: 'alice', identity: { kind: 'authenticated', name: 'alice', tenant: 'acme' } });
    expect(audit.filter((e) => e.kind === 'approval').map((e) => [e.by, e.decision, e.votes ?? ''])).toEqual([
      ['alice', 'not counted', ''],
      ['bob', 'approved', '1 of 2'],
      ['gus', 'not counted', ''],
      ['carol', 'approved', '2 of 2'],
    ]);
  });

  it('attack: a new execution under the finished run id, with its signed start and both approvals sent again, runs nothing and names nobody', async () => {
    const { repo, script } = makeVersionRepo();
    const genuine = await startThroughServe(repo, script);
    const runId = genuine.workflowId;
    await t.waitFor(genuine, (s) => s.pendingApprovals.length > 0);
    await approveVia(tok.bob!, runId);
    await t.waitFor(genuine, (s) => s.pendingApprovals[0]?.approvals?.by.length === 1);
    await approveVia(tok.carol!, runId);
    expect((await outcome(genuine)).state).toBe('succeeded');

    // the attacker has the gRPC port only: the history, and a start of their own under the same id
    const { start, decisions } = await capturedFrom(genuine);
    expect(decisions.map((d) => d.attestation?.user)).toEqual(['bob', 'carol']);
    const evil = writeScript(join(repo, '..'), 'never-shown', {
      steps: [{ tool_use: [{ name: 'run_command', input: { command: 'make --version && echo THIS-COMMAND-WAS-NEVER-SHOWN', reason: 'x' } }] }],
    });
    const input = (await startInput(genuine)) as RunInput;
    const reuse = (over: Partial<RunInput>) =>
      t.env.client.workflow.start('kilnRun', {
        workflowId: runId,
        taskQueue: QUEUE,
        args: [{ ...input, model: `scripted:${evil}`, ...over }],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        typedSearchAttributes: [{ key: KilnTenant, value: 'acme' }],
      });
    const auditBefore = readFileSync(join(repo, '.kiln', 'runs', runId, 'audit.jsonl'), 'utf8');

    // in the same repo: the run's files belong to the execution that made them; nothing is read or written
    const same = await reuse({});
    await same.signal(startedBySignal, start);
    const refused = await outcome(same);
    expect(refused.state).toBe('blocked');
    expect(refused.reason).toMatch(new RegExp(`run id ${runId} belongs to execution .*reuses it`));
    expect(readFileSync(join(repo, '.kiln', 'runs', runId, 'audit.jsonl'), 'utf8')).toBe(auditBefore);

    // in a copy of the repo, where no file says the id was used: the signatures themselves do not carry over
    const copy = repoWith({ 'a.txt': 'a\n', '.kiln/policy.json': TWO_PERSON });
    const forged = await reuse({ repo: copy });
    await forged.signal(startedBySignal, start);
    const asked = await t.waitFor(forged, (s) => s.pendingApprovals.length > 0);
    expect(asked.pendingApprovals[0]!.summary).toContain('THIS-COMMAND-WAS-NEVER-SHOWN');
    for (const d of decisions) await forged.executeUpdate(approveUpdate, { args: [d] });
    const st = await t.waitFor(forged, (s) => s.log.filter((l) => l.text.includes('does not count')).length === 2);
    expect(st.pendingApprovals[0]!.approvals!.by).toEqual([]);
    expect(st.phase).toBe('awaiting_approval');
    const log = st.log.map((l) => l.text).join('\n');
    expect(log).toMatch(/started by alice \(self-declared; no signed start verifies for this execution\)/);
    expect(log).toMatch(/does not verify for this execution, approval, call and decision/);
    expect(st.startedBy).toMatchObject({ kind: 'self-declared' });
    await forged.cancel();
    await outcome(forged).catch(() => undefined);
    // what the forged execution recorded: a claim, two refusals, never an approval; the command never ran
    const audit = auditOf(st.artifactsDir).filter((e) => e.kind === 'start' || e.kind === 'approval');
    expect(audit.map((e) => [e.kind, e.by, e.decision ?? '', (e.identity as { kind?: string } | undefined)?.kind ?? ''])).toEqual([
      ['start', 'alice', 'started', 'self-declared'],
      ['approval', 'bob', 'not counted', 'self-declared'],
      ['approval', 'carol', 'not counted', 'self-declared'],
    ]);
    expect(readFileSync(join(st.artifactsDir, 'events.jsonl'), 'utf8')).not.toMatch(/run_command: make --version && echo THIS-COMMAND-WAS-NEVER-SHOWN →/);
  });
});

describe("a pre-approval's os-user tag", () => {
  it('attack: the tag copied onto another command is recorded self-declared; control: on the command it was signed for it is the OS user', async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'pre-tag', { steps: [{ tool_use: [{ name: 'finish', input: { summary: 'nothing' } }] }] });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, approvalTimeoutMs: 60_000 });
    const handle = await t.start(input);
    // the kiln CLI, holding the same approval key as the worker (kiln dev shares KILN_HOME)
    const by = await approverFor(handle, undefined, { kind: 'pre-approval', command: 'npm run lint', scope: 'once' }, workerEnv);
    await handle.executeUpdate(preApproveUpdate, { args: [{ text: 'npm run lint', by }] });
    // the same tag, read from the history by a raw gRPC client, on a command its signer never named
    await handle.executeUpdate(preApproveUpdate, { args: [{ text: 'make --version && echo NEVER-NAMED', by }] });
    const r = await outcome(handle);
    const held = auditOf(r.artifactsDir).filter((e) => e.kind === 'pre-approval');
    expect(held.map((e) => [e.command, (e.identity as { kind: string }).kind])).toEqual([
      ['npm run lint', 'os-user'],
      ['make --version && echo NEVER-NAMED', 'self-declared'],
    ]);
    expect(held[1]!.identity).toMatchObject({ unverified: expect.stringMatching(/exactly this decision/) });
  });
});

describe('a run moved to another tenant', () => {
  it("attack: a new execution under acme's closed run id with KilnTenant=evil and another repo reads nothing for eve, lists nothing; control: acme still reads its run", async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'quick', {
      steps: [
        {
          tool_use: [
            { name: 'create_file', input: { path: 'B.md', content: 'b\n' } },
            { name: 'finish', input: { summary: 'done' } },
          ],
        },
      ],
    });
    const handle = await startThroughServe(repo, script);
    const runId = handle.workflowId;
    expect((await outcome(handle)).state).toBe('succeeded');
    // control: acme's run is acme's
    expect((await call('GET', `/runs/${runId}`, tok.bob!)).status).toBe(200);
    expect((await call('GET', `/runs/${runId}/artifacts/audit.jsonl`, tok.bob!)).status).toBe(200);
    expect((await call('GET', `/runs/${runId}`, tok.eve!)).status).toBe(404);

    // eve's own repo, for which she holds the tenant's word; acme's run id, a search attribute of her choosing
    const eveRepo = repoWith({ 'e.txt': 'e\n' });
    allow('evil', eveRepo);
    const input = (await startInput(handle)) as RunInput;
    const moved = await t.env.client.workflow.start('kilnRun', {
      workflowId: runId,
      taskQueue: QUEUE,
      args: [{ ...input, repo: eveRepo }],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [{ key: KilnTenant, value: 'evil' }],
      memo: { kilnServe: { startedBy: 'eve' } },
    });
    await moved.cancel();
    for (const path of [`/runs/${runId}`, `/runs/${runId}/artifacts`, `/runs/${runId}/artifacts/audit.jsonl`])
      expect((await call('GET', path, tok.eve!)).status, path).toBe(404);
    expect(JSON.parse((await call('GET', '/runs', tok.eve!)).body).runs).toEqual([]);
    // acme still reads its own run: the execution the server started, with its outcome and audit
    const own = await call('GET', `/runs/${runId}`, tok.bob!);
    expect(own.status).toBe(200);
    expect(JSON.parse(own.body)).toMatchObject({ run: { runId, status: 'COMPLETED', startedBy: 'alice' }, result: { state: 'succeeded' } });
    const audit = await call('GET', `/runs/${runId}/artifacts/audit.jsonl`, tok.bob!);
    expect(audit.status).toBe(200);
    expect(audit.body).toContain('"kind":"start"');
    expect(JSON.parse((await call('GET', '/runs', tok.bob!)).body).runs.map((r: { runId: string }) => r.runId)).toContain(runId);
  });
});
