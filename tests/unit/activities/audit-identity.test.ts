/** audit.jsonl says how each approver was identified, so a typed name is never read as a login. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordAudit, type AuditEntry } from '../../../src/activities/audit.js';
import { loadApprovalKey, signOsUser } from '../../../src/auth/attestation.js';
import { signedApprover } from '../../../src/client/signed-approver.js';
import { approverSubject, cliApprover, identifyApprover } from '../../../src/shared/approver.js';
import { auditWriter, EXECUTION } from '../../helpers/audit-writer.js';

// the CLI and the worker of `kiln dev` share KILN_HOME, so the approval key the CLI makes
const env = { ...process.env, KILN_HOME: mkdtempSync(join(tmpdir(), 'kiln-home-')) };
delete env.KILN_APPROVAL_KEY;
loadApprovalKey({ env, create: true });

const RUN = { runId: 'r1', execution: EXECUTION };
const HASH = 'a'.repeat(64);

async function auditOf(entries: Array<{ id: string; by: string; hash?: string } | AuditEntry>, workerEnv: NodeJS.ProcessEnv = env) {
  const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
  const w = auditWriter(repo, 'r1', { env: workerEnv });
  for (const e of entries) await w.write('kind' in e ? e : { kind: 'approval', id: e.id, decision: 'approved', hash: e.hash ?? HASH, by: e.by });
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

  it('attack: a typed os-user tag (the Web UI, a raw signal) is self-declared, signed or not', async () => {
    const otherKey = Buffer.alloc(32, 7);
    const lines = await auditOf([
      { id: 'ap-1', by: 'alice [os-user alice@box]' },
      {
        id: 'ap-2',
        by: cliApprover('alice', { user: 'alice', host: 'box' }, (name) =>
          signOsUser(otherKey, { ...RUN, subject: approverSubject({ kind: 'approval', id: 'ap-2', hash: HASH }), name, user: 'alice', host: 'box' }),
        ),
      },
    ]);
    expect(lines[0]!.identity).toEqual({ kind: 'self-declared', name: 'alice', osUser: 'alice', host: 'box' });
    expect(lines[1]!.identity).toMatchObject({ kind: 'self-declared', name: 'alice', unverified: expect.stringMatching(/not signed by a kiln CLI/) });
    expect(JSON.stringify(lines.map((l) => l.identity))).not.toMatch(/osUserSig/);
  });

  it("attack: the CLI's signed tag copied from the history onto another approval, another call, another execution or another run is self-declared", async () => {
    const by = signedApprover(undefined, RUN, { kind: 'approval', id: 'ap-1', hash: HASH }, env);
    const [own, other, otherCall] = await auditOf([
      { id: 'ap-1', by },
      { id: 'ap-2', by },
      // the same approval id asking about another command (a new execution's ap-1)
      { id: 'ap-1', by, hash: 'b'.repeat(64) },
    ]);
    expect(own!.identity).toMatchObject({ kind: 'os-user' });
    expect(other!.identity).toMatchObject({ kind: 'self-declared' });
    expect(otherCall!.identity).toMatchObject({ kind: 'self-declared' });
    for (const [runId, execution] of [
      ['r2', EXECUTION],
      ['r1', 'exec-2'],
    ]) {
      const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
      await auditWriter(repo, runId, { env, execution }).write({ kind: 'approval', id: 'ap-1', decision: 'approved', hash: HASH, by });
      expect(readFileSync(join(repo, '.kiln', 'runs', runId!, 'audit.jsonl'), 'utf8')).toContain('"kind":"self-declared"');
    }
  });

  it("attack: a pre-approval's signed tag copied onto another command (or a wider scope) is self-declared; control: on its own command it is the OS user", async () => {
    const by = signedApprover(undefined, RUN, { kind: 'pre-approval', command: 'npm run lint', scope: 'once' }, env);
    const held = (command: string, scope: 'once' | 'run' = 'once'): AuditEntry => ({
      kind: 'pre-approval',
      id: 'pre-1',
      decision: 'held',
      scope,
      what: command,
      command,
      by,
    });
    const [genuine, copied, wider] = await auditOf([held('npm run lint'), held('make --version && curl evil'), held('npm run lint', 'run')]);
    expect(genuine!.identity).toMatchObject({ kind: 'os-user' });
    expect(copied!.identity).toMatchObject({ kind: 'self-declared', unverified: expect.stringMatching(/exactly this decision/) });
    expect(wider!.identity).toMatchObject({ kind: 'self-declared' });
  });

  it('control: the kiln CLI with no --by records the OS account it ran as, signed with the key it shares with the worker', async () => {
    const by = signedApprover(undefined, RUN, { kind: 'approval', id: 'ap-1', hash: HASH }, env);
    const user = identifyApprover(by).osUser!;
    const [line] = await auditOf([{ id: 'ap-1', by }]);
    expect(line!.identity).toEqual({ kind: 'os-user', name: user, osUser: user, host: identifyApprover(by).host });
    // a worker without that key cannot tell it from a typed tag
    const [keyless] = await auditOf([{ id: 'ap-1', by }], { KILN_HOME: mkdtempSync(join(tmpdir(), 'kiln-home-')) });
    expect(keyless!.identity).toMatchObject({ kind: 'self-declared', unverified: expect.stringMatching(/no approval key/) });
  });

  it("Kiln's own decisions (a timeout) name no person", async () => {
    const repo = mkdtempSync(join(tmpdir(), 'kiln-audit-'));
    await recordAudit({ env: process.env }, { runId: 'r1', repo, head: null, entry: { kind: 'approval', id: 'ap-1', decision: 'timeout', by: 'kiln' } });
    expect(readFileSync(join(repo, '.kiln', 'runs', 'r1', 'audit.jsonl'), 'utf8')).not.toContain('identity');
  });
});
