/**
 * The audit chain's end is anchored in the run, not the file: a finished run's audit.jsonl whose
 * last line is edited fails `kiln audit verify` against the head the run recorded (asked by
 * status query, and from its history once no worker answers); the untouched file passes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../../src/activities/audit-chain.js';
import { auditVerify } from '../../src/cli/commands/audit.js';
import { recordedAuditHead } from '../../src/client/audit-head.js';
import { outcome } from '../../src/client/runs.js';
import { approveUpdate } from '../../src/shared/messages.js';
import { repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';

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

describe("audit verify against the run's record of the head", () => {
  it("attack: an edited last line of a finished run's audit fails; control: the untouched file passes (query, then history)", async () => {
    const repo = repoWith({ 'package.json': PACKAGE, 'a.txt': 'a\n' });
    const script = writeScript(join(repo, '..'), 'audit-head', {
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
    expect(verifyAuditChain(readFileSync(file, 'utf8'), input.runId)).toEqual({ ok: true, entries: lines.length });
    await expect(auditVerify(repo, input.runId, byQuery)).rejects.toThrow(/\(the last\) was changed after it was written/);

    // with no worker to answer, the head comes from the run's history: same verdicts
    await t.worker.shutdown();
    workerStopped = true;
    const byHistory = await recordedAuditHead(handle, client);
    expect(byHistory).toEqual({ head: byQuery.head, from: "the run's Temporal history" });
    await expect(auditVerify(repo, input.runId, byHistory)).rejects.toThrow(/\(the last\) was changed/);
    writeFileSync(file, original);
    expect(await auditVerify(repo, input.runId, byHistory)).toMatch(/head matches the run's record/);
  });
});
