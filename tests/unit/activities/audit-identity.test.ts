/** audit.jsonl says how each approver was identified, so a typed name is never read as a login. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditActivities } from '../../../src/activities/audit.js';
import { cliApprover, identifyApprover } from '../../../src/shared/approver.js';

async function auditOf(entries: Array<{ id: string; by: string }>) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
  const { recordAudit } = auditActivities();
  for (const e of entries) await recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: e.id, decision: 'approved', by: e.by } });
  return readFileSync(join(repo, '.kiln', 'runs', 'r1', 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; identity: unknown });
}

describe('approver identity in the audit', () => {
  it('attack: a name sent through the Web UI or a raw signal is recorded as self-declared, as is a --by that is not the OS user', async () => {
    const lines = await auditOf([
      { id: 'ap-1', by: 'admin' },
      { id: 'ap-2', by: cliApprover('admin', { user: 'mallory', host: 'box' }) },
    ]);
    expect(lines[0]!.identity).toEqual({ kind: 'self-declared', name: 'admin' });
    expect(lines[1]!.identity).toEqual({ kind: 'self-declared', name: 'admin', osUser: 'mallory', host: 'box' });
  });

  it('control: the kiln CLI with no --by records the OS account it ran as', async () => {
    const [line] = await auditOf([{ id: 'ap-1', by: cliApprover(undefined, { user: 'alice', host: 'box' }) }]);
    expect(line!.identity).toEqual({ kind: 'os-user', name: 'alice', osUser: 'alice', host: 'box' });
    expect(identifyApprover(cliApprover('alice', { user: 'alice', host: 'box' })).kind).toBe('os-user');
  });

  it("Kiln's own decisions (a timeout) name no person", async () => {
    const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
    await auditActivities().recordAudit({ runId: 'r1', repo, entry: { kind: 'approval', id: 'ap-1', decision: 'timeout', by: 'kiln' } });
    expect(readFileSync(join(repo, '.kiln', 'runs', 'r1', 'audit.jsonl'), 'utf8')).not.toContain('identity');
  });
});
