/**
 * The audit chain's end is anchored in the run, not the file: a finished run's audit.jsonl whose
 * last line is edited fails `kiln audit verify` against the head the run recorded (asked by
 * status query, and from its history once no worker answers); the untouched file passes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditGenesis, sha256Hex, verifyAuditChain } from '../../src/store/audit-chain.js';
import { auditFileExecution, auditVerify, UNVERIFIED_EXIT } from '../../src/cli/actions/audit.js';
import { recordedAuditHead } from '../../src/client/audit-head.js';
import { outcome, requestCancel } from '../../src/client/runs.js';
import { approveUpdate, preApproveUpdate } from '../../src/shared/messages.js';
import type { RunInput } from '../../src/shared/types.js';
import { repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
let workerStopped = false;

beforeAll(async () => {
  testKilnHome();
  t = await workflowTestEnv('kiln-audit-head-tests');
});
afterAll(async () => {
  if (workerStopped) await t?.env.teardown();
  else await t?.stop();
});

const PACKAGE = JSON.stringify({ name: 'x', version: '1.0.0', scripts: { lint: 'node -e "console.log(\'lint ran: clean\')"' } });

/**
 * A run whose model runs the lint (asked, approved by bob; the script checks it said "clean"),
 * then adds LINTED.md and finishes.
 */
async function lintApprovedByBob(name: string): Promise<{ repo: string; input: RunInput; handle: RunHandle }> {
  const repo = repoWith({ 'package.json': PACKAGE, 'a.txt': 'a\n' });
  const script = writeScript(join(repo, '..'), name, {
    steps: [
      { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'x' } }] },
      {
        expect: { tool_result_contains: 'lint ran: clean' },
        tool_use: [
          { name: 'create_file', input: { path: 'LINTED.md', content: 'lint ran\n' } },
          { name: 'finish', input: { summary: 'linted' } },
        ],
      },
    ],
  });
  const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
  const handle = await t.start(input);
  await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
  await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'bob' }] });
  return { repo, input, handle };
}

describe("audit verify against the run's record of the head", () => {
  it('attack: the audit rewritten while the run is open (start line changed, real lines deleted, a fake "2 of 2" added), then a cancel: verify names the break; control: untouched, it verifies', async () => {
    const repo = repoWith({ 'package.json': PACKAGE, 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'audit-open', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'x' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'again' } }] },
      ],
    });
    const runOne = async () => {
      const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true, heartbeatTimeoutMs: 15_000 });
      const handle = await t.start(input);
      await handle.executeUpdate(preApproveUpdate, { args: [{ text: 'npm test', by: 'alice' }] });
      await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
      await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: false, reason: 'not now', by: 'bob' }] });
      await t.waitFor(handle, (s) => s.pendingApprovals[0]?.id === 'ap-2');
      return { handle, file: join(repo, '.kiln', 'runs', input.runId, 'audit.jsonl') };
    };
    const verify = async (handle: RunHandle) =>
      auditVerify(repo, handle.workflowId, await recordedAuditHead(handle, t.env.client, await auditFileExecution(repo, handle.workflowId)));

    // control: nobody touches the file
    const honest = await runOne();
    await requestCancel(honest.handle, { by: 'dave', reason: 'enough' });
    await outcome(honest.handle).catch(() => undefined);
    expect(await verify(honest.handle)).toMatch(/^ok, \d+ entries, head matches the run's record/);

    // attack: the file is rewritten while the run waits, as a whole chain that holds on its own
    const { handle, file } = await runOne();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const execution = lines[0]!.execution as string;
    expect(execution).toBe((await handle.describe()).raw.workflowExecutionInfo!.firstRunId);
    writeFileSync(
      file,
      rechained(handle.workflowId, execution, [
        { ...lines[0], by: 'mallory' },
        { kind: 'approval', id: 'ap-1', decision: 'approved', by: 'carol', votes: '2 of 2' },
      ]),
    );
    expect(verifyAuditChain(readFileSync(file, 'utf8'), handle.workflowId)).toMatchObject({ ok: true, entries: 2 });
    // `kiln cancel`: the run writes who cancelled, after the forged lines
    await requestCancel(handle, { by: 'dave', reason: 'enough' });
    await outcome(handle).catch(() => undefined);
    expect(readFileSync(file, 'utf8')).toContain('"by":"dave"');
    // the run went on from its own head: its next line does not follow the forged ones
    await expect(verify(handle)).rejects.toThrow(/audit\.jsonl line 3 (is entry \d+ in place of entry 3|was changed)/);
  });

  it("attack: an id reused by a new execution, then a forged line appended or the file cut: verify reads the first execution's head and fails; a file of the new execution is unverified (exit 3)", async () => {
    const { repo, input, handle } = await lintApprovedByBob('audit-reuse');
    expect((await outcome(handle)).state).toBe('succeeded');
    const file = join(repo, '.kiln', 'runs', input.runId, 'audit.jsonl');
    const original = readFileSync(file, 'utf8');
    const verify = async () => auditVerify(repo, input.runId, await recordedAuditHead(handle, t.env.client, await auditFileExecution(repo, input.runId)));
    expect(await verify()).toMatch(/^ok, \d+ entries, head matches/);

    // the id now names an execution that wrote nothing (its input is refused at once)
    const reused = await t.env.client.workflow.start('kilnRun', {
      workflowId: input.runId,
      taskQueue: 'kiln-audit-head-tests',
      args: [{ runId: input.runId } as RunInput],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    await reused.result().catch(() => undefined);
    expect(await verify()).toMatch(/^ok, \d+ entries, head matches the run's record \(the Temporal history of execution .* \(the run id now names execution/);

    const lines = original.trim().split('\n');
    const last = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
    const forged = JSON.stringify({ ...last, seq: lines.length + 1, prev: sha256Hex(lines[lines.length - 1]!), kind: 'approval', id: 'ap-9', by: 'mallory' });
    writeFileSync(file, `${original}${forged}\n`);
    await expect(verify()).rejects.toThrow(/added after the run wrote its last one/);
    writeFileSync(file, `${lines.slice(0, -1).join('\n')}\n`);
    await expect(verify()).rejects.toThrow(/removed from the end/);
    // a file that claims to be the new execution's (which recorded no head): not ok, unverified
    const newExecution = (await reused.describe()).raw.workflowExecutionInfo!.firstRunId!;
    writeFileSync(file, rechained(input.runId, newExecution, [{ kind: 'approval', id: 'ap-1', decision: 'approved', by: 'mallory' }]));
    await expect(verify()).rejects.toMatchObject({ exitCode: UNVERIFIED_EXIT, message: expect.stringMatching(/^unverified: .*keeps no head/) });
    writeFileSync(file, original);
    expect(await verify()).toMatch(/^ok/);
  });

  it("attack: an edited last line of a finished run's audit fails; control: the untouched file passes (query, then history)", async () => {
    const { repo, input, handle } = await lintApprovedByBob('audit-head');
    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');

    const file = join(r.artifactsDir, 'audit.jsonl');
    const original = readFileSync(file, 'utf8');
    const lines = original.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const client = t.env.client;

    // control: the run's record (status query, the worker is up) matches the untouched file
    const byQuery = await recordedAuditHead(handle, client);
    expect(byQuery.from).toMatch(/status query/);
    expect(byQuery.head?.seq).toBe(lines.length);
    expect(await auditVerify(repo, input.runId, byQuery)).toMatch(new RegExp(`^ok, ${lines.length} entries, head matches the run's record`));

    // attack: the approval on the last line turned into a rejection; the chain alone cannot see it
    const last = lines[lines.length - 1]!;
    expect(last).toContain('"decision":"approved"');
    writeFileSync(file, `${[...lines.slice(0, -1), last.replace('"decision":"approved"', '"decision":"rejected"')].join('\n')}\n`);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), input.runId)).toMatchObject({ ok: true, entries: lines.length });
    await expect(auditVerify(repo, input.runId, byQuery)).rejects.toThrow(/\(the last\) was changed after it was written/);

    // with no worker to answer, the head comes from the run's history: same verdicts
    await t.worker.shutdown();
    workerStopped = true;
    const byHistory = await recordedAuditHead(handle, client);
    expect(byHistory).toEqual({ head: byQuery.head, from: "the run's Temporal history", execution: byQuery.execution });
    await expect(auditVerify(repo, input.runId, byHistory)).rejects.toThrow(/\(the last\) was changed/);
    writeFileSync(file, original);
    expect(await auditVerify(repo, input.runId, byHistory)).toMatch(/head matches the run's record/);
  });
});

/** Lines of an attacker's choosing, chained from the genesis of `execution` as the writer would. */
function rechained(runId: string, execution: string, entries: Array<Record<string, unknown>>): string {
  let prev = auditGenesis(runId, execution);
  return entries
    .map((e, i) => {
      const line = JSON.stringify({ ...e, seq: i + 1, prev, runId, execution });
      prev = sha256Hex(line);
      return `${line}\n`;
    })
    .join('');
}
