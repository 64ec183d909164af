/**
 * The end of the audit chain is anchored in the run's record (the head recordAudit returns): a cut,
 * an edited last line or an appended line passes the chain but not the head; untouched passes both.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditGenesis, auditHeadOf, compareAuditHead, sha256Hex, verifyAuditChain, type AuditHead } from '../../../src/store/audit-chain.js';
import { auditFile } from '../../../src/activities/audit.js';
import { auditVerify, UNVERIFIED_EXIT } from '../../../src/cli/actions/audit.js';
import { auditWriter, EXECUTION } from '../../helpers/audit-writer.js';

async function writtenAudit(n = 4) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-head-'));
  const w = auditWriter(repo);
  let head: AuditHead | undefined;
  for (let i = 1; i <= n; i++) head = await w.write({ kind: 'approval', id: `ap-${i}`, decision: 'approved', by: `person${i}` });
  const file = auditFile(repo, 'r1');
  return { repo, file, w, head: head!, lines: readFileSync(file, 'utf8').trim().split('\n') };
}
const rewrite = (file: string, lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);
const fromRun = (head: AuditHead) => ({ head, from: 'the test run', execution: EXECUTION });

/** What an attacker who can write the file but not Temporal makes of it: lines of their choosing, chained from genesis. */
function forgedChain(lines: Array<Record<string, unknown>>): string[] {
  const out: string[] = [];
  let prev = auditGenesis('r1', EXECUTION);
  for (const [i, l] of lines.entries()) {
    const line = JSON.stringify({ seq: i + 1, prev, at: '2026-12-01T10:00:00.000Z', runId: 'r1', execution: EXECUTION, ...l });
    out.push(line);
    prev = sha256Hex(line);
  }
  return out;
}

describe("the audit chain's head, compared with the run's record", () => {
  it('control: recordAudit returns the head of the file it wrote, and an untouched file matches it', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    expect(head).toEqual({ seq: 4, hash: sha256Hex(lines[3]!) });
    expect(auditHeadOf(readFileSync(file, 'utf8'))).toEqual(head);
    expect(compareAuditHead(readFileSync(file, 'utf8'), head)).toEqual({ ok: true });
    expect(await auditVerify(repo, 'r1', fromRun(head))).toMatch(/^ok, 4 entries, head matches the run's record/);
  });

  it('a retried activity whose line is written returns that line as the head', async () => {
    const { head, w } = await writtenAudit(2);
    expect(await w.retry()).toEqual(head);
  });

  it('attack: trailing lines removed: the chain holds, the head does not', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    rewrite(file, lines.slice(0, 3));
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 3, execution: EXECUTION });
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
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 4, execution: EXECUTION });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/line 4 \(the last\) was changed after it was written/);
  });

  it('attack: a forged line appended with a correct seq and prev: the chain holds, the head does not', async () => {
    const { repo, file, head, lines } = await writtenAudit();
    const forged = JSON.stringify({
      seq: 5,
      prev: sha256Hex(lines[3]!),
      at: new Date().toISOString(),
      runId: 'r1',
      execution: EXECUTION,
      kind: 'approval',
      id: 'ap-9',
      decision: 'approved',
      by: 'mallory',
    });
    rewrite(file, [...lines, forged]);
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toEqual({ ok: true, entries: 5, execution: EXECUTION });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/line 5 was added after the run wrote its last one/);
  });

  it("attack: the file rewritten while the run is open (whole chain recomputed): the run's next line chains from its recorded head, and verify names the break", async () => {
    const { repo, file, w } = await writtenAudit(3);
    // the start line changed to mallory, a real line deleted, a fake second approval added: a chain that holds on its own
    rewrite(
      file,
      forgedChain([
        { kind: 'approval', id: 'ap-1', decision: 'approved', by: 'mallory' },
        { kind: 'approval', id: 'ap-2', decision: 'approved', by: 'carol', votes: '2 of 2' },
      ]),
    );
    expect(verifyAuditChain(readFileSync(file, 'utf8'), 'r1')).toMatchObject({ ok: true, entries: 2 });
    // the run writes on (a cancel): from the head it recorded, not from the forged last line
    const head = await w.write({ kind: 'cancel', by: 'kiln' });
    expect(head.seq).toBe(4);
    const written = JSON.parse(readFileSync(file, 'utf8').trim().split('\n')[2]!) as { seq: number; prev: string };
    expect(written).toMatchObject({ seq: 4, prev: w.headBefore });
    await expect(auditVerify(repo, 'r1', fromRun(head))).rejects.toThrow(/audit\.jsonl line 3 (is entry 4 in place of entry 3|was changed)/);
  });

  it('control: the same run untouched, writing on, verifies', async () => {
    const { repo, w } = await writtenAudit(3);
    const head = await w.write({ kind: 'cancel', by: 'kiln' });
    expect(await auditVerify(repo, 'r1', fromRun(head))).toMatch(/^ok, 4 entries, head matches/);
  });

  it("attack: without the run's record (--offline, no head kept) a forged line or a cut is not called ok: unverified, exit 3", async () => {
    const { repo, file, lines } = await writtenAudit();
    const forged = forgedChain([{ kind: 'approval', id: 'ap-1', decision: 'approved', by: 'mallory' }]);
    rewrite(file, forged);
    await expect(auditVerify(repo, 'r1')).rejects.toMatchObject({ exitCode: UNVERIFIED_EXIT, message: expect.stringMatching(/^unverified: .*--offline/) });
    rewrite(file, lines.slice(0, 3));
    await expect(auditVerify(repo, 'r1', { head: undefined, from: 'the run' })).rejects.toMatchObject({
      exitCode: UNVERIFIED_EXIT,
      message: expect.stringMatching(/^unverified: the chain of 3 entries holds, but the run keeps no head/),
    });
  });
});
