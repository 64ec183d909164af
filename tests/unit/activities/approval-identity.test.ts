/**
 * A decision counts as authenticated only when kiln serve's signature verifies for this run, this
 * approval and this decision, with the key this worker reads; every forgery falls back to the
 * kind its `by` earns.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identifyDecision as decide } from '../../../src/activities/approvals.js';
import { approvalKeyPath, signApproval, type ApprovalClaim } from '../../../src/auth/attestation.js';
import type { ApprovalDecision } from '../../../src/shared/types.js';
import { existsSync } from 'node:fs';

const key = randomBytes(32);
const env = { KILN_APPROVAL_KEY: key.toString('hex'), KILN_HOME: mkdtempSync(join(tmpdir(), 'kiln-home-')) };
const identifyDecision = (inp: Parameters<typeof decide>[1]) => decide({ env }, inp);

const CALL = 'a'.repeat(64);
const claim: ApprovalClaim = {
  execution: 'exec-a',
  runId: 'run-a',
  call: CALL,
  approvalId: 'ap-1',
  approve: true,
  scope: 'once',
  user: 'alice',
  tenant: 'acme',
  issuedAt: '2026-12-01T15:00:00.000Z',
};
const signed = (c: Partial<ApprovalClaim> = {}, k = key): ApprovalDecision => {
  const full = { ...claim, ...c };
  return { approvalId: full.approvalId, approve: full.approve, scope: full.scope, by: 'alice', attestation: signApproval(k, full) };
};
const identify = (d: ApprovalDecision, runId = 'run-a', execution = 'exec-a', call = CALL) => identifyDecision({ runId, execution, call, decision: d });

describe('a signed decision from kiln serve', () => {
  it('control: a genuine signature is recorded as the authenticated user of its tenant', async () => {
    expect(await identify(signed())).toEqual({ kind: 'authenticated', name: 'alice', tenant: 'acme' });
    expect(await identify({ ...signed({ scope: 'run' }) })).toMatchObject({ kind: 'authenticated' });
  });

  it('attack: a signature made with another key is not authenticated', async () => {
    const id = await identify(signed({}, randomBytes(32)));
    expect(id.kind).toBe('self-declared');
    expect(id.unverified).toMatch(/does not verify/);
  });

  it('attack: the signed decision altered (approval id, approve, scope, user, tenant, time) is not authenticated', async () => {
    const d = signed({ approve: false });
    const forgeries: ApprovalDecision[] = [
      { ...signed(), approvalId: 'ap-2' },
      { ...d, approve: true },
      { ...signed(), scope: 'run' },
      { ...signed(), attestation: { ...signed().attestation!, user: 'mallory' } },
      { ...signed(), attestation: { ...signed().attestation!, tenant: 'other' } },
      { ...signed(), attestation: { ...signed().attestation!, issuedAt: '2027-01-01T00:00:00.000Z' } },
      { ...signed(), attestation: { ...signed().attestation!, sig: 'zz' } },
    ];
    for (const f of forgeries) expect((await identify(f)).kind, JSON.stringify(f)).not.toBe('authenticated');
  });

  it('attack: a signature replayed from another approval or another run is not authenticated', async () => {
    const fromAp1 = signed().attestation!;
    expect((await identify({ approvalId: 'ap-2', approve: true, by: 'alice', attestation: fromAp1 })).kind).not.toBe('authenticated');
    // the run, the execution and the call are the workflow's own, never fields the sender chose
    expect((await identify(signed(), 'run-b')).kind).not.toBe('authenticated');
    const reused = await identify(signed(), 'run-a', 'exec-b');
    expect(reused).toMatchObject({ kind: 'self-declared', unverified: expect.stringMatching(/this execution, approval, call and decision/) });
    expect((await identify(signed(), 'run-a', 'exec-a', 'b'.repeat(64))).kind).not.toBe('authenticated');
  });

  it('attack: a worker without the key counts nothing as authenticated, and does not create one', async () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
    const keyless = (inp: Parameters<typeof decide>[1]) => decide({ env: { KILN_HOME: home } }, inp);
    const id = await keyless({ runId: 'run-a', execution: 'exec-a', call: CALL, decision: signed() });
    expect(id).toMatchObject({ kind: 'self-declared', name: 'alice', unverified: expect.stringMatching(/no approval key/) });
    expect(existsSync(approvalKeyPath({ KILN_HOME: home }))).toBe(false);
  });

  it('a decision without a signature keeps the kind its by earns', async () => {
    expect(await identify({ approvalId: 'ap-1', approve: true, by: 'bob' })).toEqual({ kind: 'self-declared', name: 'bob' });
  });
});
