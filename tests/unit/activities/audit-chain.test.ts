/** audit.jsonl is a hash chain: an edited, removed or moved line is named by `kiln audit verify`; an untouched one passes. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditGenesis, verifyAuditChain } from '../../../src/activities/audit-chain.js';
import { auditActivities, auditFile } from '../../../src/activities/audit.js';
import { auditVerify } from '../../../src/cli/commands/audit.js';

async function writtenAudit(n = 4) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
  const { recordAudit } = auditActivities();
  for (let i = 1; i <= n; i++) await recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: `ap-${i}`, decision: 'approved', by: `person${i}` } });
  const file = auditFile(repo, 'r1');
  return { repo, file, lines: readFileSync(file, 'utf8').trim().split('\n') };
}
const rewrite = (file: string, lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);

describe('the audit hash chain', () => {
  it('control: an untouched audit passes, through `kiln audit verify` too', async () => {
    const { repo, lines } = await writtenAudit();
    expect(JSON.parse(lines[0]!)).toMatchObject({ seq: 1, prev: auditGenesis('r1') });
    expect(verifyAuditChain(`${lines.join('\n')}\n`, 'r1')).toEqual({ ok: true, entries: 4 });
    expect(await auditVerify(repo, 'r1')).toMatch(/^ok, 4 entries/);
  });

  it('a retried activity writes its line once and the chain holds', async () => {
    const { repo, file } = await writtenAudit(2);
    await auditActivities().recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: 'ap-2', decision: 'approved', by: 'person2' } });
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 2 });
  });

  it('a pre-approval for the run gets one line for each approval it answered', async () => {
    const { repo, file } = await writtenAudit(1);
    const used = (answered: string) =>
      auditActivities().recordAudit({ runId: 'r1', repo, entry: { kind: 'pre-approval', id: 'pre-1', decision: 'used', answered, by: 'alice' } });
    await used('ap-2');
    await used('ap-3');
    await used('ap-3');
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 3 });
  });

  it('attack: an edited line is named (a changed decision, or a changed approver)', async () => {
    const { repo, file, lines } = await writtenAudit();
    const edited = [...lines];
    edited[1] = edited[1]!.replace('"decision":"approved"', '"decision":"rejected"');
    rewrite(file, edited);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 2 });
    await expect(auditVerify(repo, 'r1')).rejects.toThrow(/line 2 was changed after it was written/);
    edited[1] = lines[1]!;
    edited[0] = edited[0]!.replace('person1', 'mallory');
    rewrite(file, edited);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 1 });
  });

  it('attack: a deleted line is named', async () => {
    const { file, lines } = await writtenAudit();
    rewrite(file, [lines[0]!, lines[2]!, lines[3]!]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({
      ok: false,
      line: 2,
      problem: expect.stringMatching(/entry 3 in place of entry 2/),
    });
    rewrite(file, lines.slice(1));
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 1 });
  });

  it('attack: reordered lines are named', async () => {
    const { file, lines } = await writtenAudit();
    rewrite(file, [lines[0]!, lines[2]!, lines[1]!, lines[3]!]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 2 });
  });

  it('attack: a line without a chain (as older Kiln wrote them, or forged) is named, not skipped', () => {
    const legacy = `${JSON.stringify({ at: '2026-01-01T00:00:00.000Z', runId: 'r1', kind: 'approval', by: 'alice' })}\n`;
    expect(verifyAuditChain(legacy, 'r1')).toMatchObject({ ok: false, line: 1, problem: expect.stringMatching(/carries no hash chain/) });
  });

  it("attack: another run's audit does not verify as this run's", async () => {
    const { file } = await writtenAudit();
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r2')).toMatchObject({ ok: false, line: 1 });
  });
});
