/** audit.jsonl is a hash chain: an edited, removed or moved line is named by `kiln audit verify`; an untouched one passes. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditGenesis, sha256Hex, verifyAuditChain } from '../../../src/store/audit-chain.js';
import { auditFile } from '../../../src/activities/audit.js';
import { auditVerify } from '../../../src/cli/actions/audit.js';
import { auditWriter, EXECUTION } from '../../helpers/audit-writer.js';

async function writtenAudit(n = 4) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
  const w = auditWriter(repo);
  for (let i = 1; i <= n; i++) await w.write({ kind: 'approval', id: `ap-${i}`, decision: 'approved', by: `person${i}` });
  const file = auditFile(repo, 'r1');
  return { repo, file, w, lines: readFileSync(file, 'utf8').trim().split('\n') };
}
const rewrite = (file: string, lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);

describe('the audit hash chain', () => {
  it('control: an untouched audit passes, through `kiln audit verify` too', async () => {
    const { repo, lines, w } = await writtenAudit();
    expect(JSON.parse(lines[0]!)).toMatchObject({ seq: 1, prev: auditGenesis('r1', EXECUTION), execution: EXECUTION });
    expect(verifyAuditChain(`${lines.join('\n')}\n`, 'r1')).toEqual({ ok: true, entries: 4, execution: EXECUTION });
    expect(await auditVerify(repo, 'r1', { head: w.head!, from: 'the test run', execution: EXECUTION })).toMatch(/^ok, 4 entries/);
  });

  it('a retried activity writes its line once and the chain holds', async () => {
    const { file, w } = await writtenAudit(2);
    expect(await w.retry()).toEqual(w.head);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 2, execution: EXECUTION });
  });

  it('a pre-approval for the run gets one line for each approval it answered', async () => {
    const { file, w } = await writtenAudit(1);
    const used = (answered: string) => w.write({ kind: 'pre-approval', id: 'pre-1', decision: 'used', answered, command: 'npm test', by: 'alice' });
    await used('ap-2');
    await used('ap-3');
    await w.retry();
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 3, execution: EXECUTION });
  });

  it('attack: an edited line is named (a changed decision, or a changed approver)', async () => {
    const { repo, file, lines } = await writtenAudit();
    const edited = [...lines];
    edited[1] = edited[1]!.replace('"decision":"approved"', '"decision":"rejected"');
    rewrite(file, edited);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 2 });
    await expect(auditVerify(repo, 'r1')).rejects.toThrow(/line 2 was changed after it was written/);
    await expect(auditVerify(repo, 'r1')).rejects.toMatchObject({ exitCode: 1 });
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

  it('attack: another execution under the same run id may not write the audit, and its lines do not chain onto it', async () => {
    const { repo, file, lines } = await writtenAudit(2);
    const reused = auditWriter(repo, 'r1', { execution: 'exec-2' });
    await expect(reused.write({ kind: 'start', decision: 'started', by: 'mallory' })).rejects.toThrow(/run id r1 belongs to execution exec-1/);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toEqual(lines);
    // written by hand (the file is writable): a line naming the other execution, chained correctly, is named
    const forged = JSON.stringify({ ...JSON.parse(lines[1]!), seq: 3, prev: sha256Hex(lines[1]!), execution: 'exec-2', by: 'mallory' });
    rewrite(file, [...lines, forged]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({
      ok: false,
      line: 3,
      problem: expect.stringMatching(/names execution "exec-2"/),
    });
    // the other execution's lines alone start from its own genesis, not this one's
    rewrite(file, [forged.replace('"exec-2"', `"${EXECUTION}"`), ...lines.slice(1)]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: false, line: 1 });
  });

  it("attack: another run's audit does not verify as this run's", async () => {
    const { file } = await writtenAudit();
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r2')).toMatchObject({ ok: false, line: 1 });
  });
});
