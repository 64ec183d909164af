/**
 * The end of the audit chain is anchored in the run's record (the head recordAudit returns): a cut,
 * an edited last line or an appended line passes the chain but not the head; untouched passes both.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditHeadOf, compareAuditHead, sha256Hex, verifyAuditChain, type AuditHead } from '../../../src/activities/audit-chain.js';
import { auditActivities, auditFile } from '../../../src/activities/audit.js';
import { auditVerify } from '../../../src/cli/commands/audit.js';

async function writtenAudit(n = 4) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-head-'));
  const { recordAudit } = auditActivities();
  let head: AuditHead | undefined;
  for (let i = 1; i <= n; i++)
    head = await recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: `ap-${i}`, decision: 'approved', by: `person${i}` } });
  const file = auditFile(repo, 'r1');
  return { repo, file, head: head!, lines: readFileSync(file, 'utf8').trim().split('\n') };
}
const rewrite = (file: string, lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);
const fromRun = (head: AuditHead) => ({ head, from: 'the test run' });

describe("the audit chain's head, compared with the run's record", () => {
  it('control: recordAudit returns the head of the file it wrote, and an untouched file matches it', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    expect(head).toEqual({ seq: 4, hash: sha256Hex(lines[3]!) });
    expect(auditHeadOf(readFileSync(file, 'utf8'))).toEqual(head);
    expect(compareAuditHead(readFileSync(file, 'utf8'), head)).toEqual({ ok: true });
    expect(await auditVerify(repo, 'r1', fromRun(head))).toMatch(/^ok, 4 entries, head matches the run's record/);
  });

  it('a retried activity whose line is written returns that line as the head', async () => {
    const { repo, head } = await writtenAudit(2);
    const again = await auditActivities().recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: 'ap-2', decision: 'approved', by: 'person2' } });
    expect(again).toEqual(head);
  });

  it('attack: trailing lines removed: the chain holds, the head does not', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    rewrite(file, lines.slice(0, 3));
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 3 });
    expect(compareAuditHead(readFileSync(file, 'utf8'), head)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/has 3 entries, the run recorded 4: lines were removed from the end/),
    });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/removed from the end/);
    writeFileSync(file, '');
    expect(compareAuditHead('', head)).toMatchObject({ ok: false, problem: expect.stringMatching(/has 0 entries/) });
  });

  it('attack: the last line edited: the chain holds, the head does not', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    rewrite(file, [...lines.slice(0, 3), lines[3]!.replace('"decision":"approved"', '"decision":"rejected"')]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 4 });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/line 4 \(the last\) was changed after it was written/);
  });

  it('attack: a forged line appended with a correct seq and prev: the chain holds, the head does not', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    const forged = JSON.stringify({
      seq: 5,
      prev: sha256Hex(lines[3]!),
      at: new Date().toISOString(),
      runId: 'r1',
      kind: 'approval',
      id: 'ap-9',
      decision: 'approved',
      by: 'mallory',
    });
    rewrite(file, [...lines, forged]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 5 });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/line 5 was added after the run wrote its last one/);
  });

  it("without the run's record (--offline, or a run from before heads) the answer says it checked the chain only", async () => {
    const { repo, file, lines } = await writtenAudit();
    rewrite(file, lines.slice(0, 3));
    expect(await auditVerify(repo, 'r1')).toMatch(/^ok, 3 entries, chain only: the head was not compared/);
    expect(await auditVerify(repo, 'r1', { head: undefined, from: 'the run' })).toMatch(/^ok, 3 entries, chain only: the run keeps no head/);
  });
});
