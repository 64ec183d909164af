import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  approvalKeyPath,
  loadApprovalKey,
  signApproval,
  signRunStart,
  verifyApproval,
  verifyRunStart,
  type ApprovalClaim,
} from '../../../src/auth/attestation.js';

const claim: ApprovalClaim = {
  execution: 'exec-1',
  runId: 'r1',
  call: 'c'.repeat(64),
  approvalId: 'ap-1',
  approve: true,
  scope: 'once',
  user: 'bob',
  tenant: 'acme',
  issuedAt: '2026-12-01T10:00:00.000Z',
};
const key = Buffer.alloc(32, 7);

describe('approval attestation', () => {
  it('control: a decision signed with the shared key verifies', () => {
    expect(verifyApproval(key, { ...claim, attestation: signApproval(key, claim) })).toBe(true);
  });

  it('attack: a signature moved to another decision, execution, run, approval, call or user does not verify', () => {
    const att = signApproval(key, claim);
    // a new execution under the same run id, or the same approval id asking about another command
    expect(verifyApproval(key, { ...claim, execution: 'exec-2', attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, call: 'd'.repeat(64), attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, execution: '', attestation: signApproval(key, { ...claim, execution: '' }) })).toBe(false);
    expect(verifyApproval(key, { ...claim, approve: false, attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, runId: 'r2', attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, approvalId: 'ap-2', attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, scope: 'run', attestation: att })).toBe(false);
    expect(verifyApproval(key, { ...claim, attestation: { ...att, user: 'mallory' } })).toBe(false);
    expect(verifyApproval(key, { ...claim, attestation: { ...att, tenant: 'other' } })).toBe(false);
  });

  it('attack: a signature made with another key, a malformed one, or none does not verify', () => {
    expect(verifyApproval(key, { ...claim, attestation: signApproval(Buffer.alloc(32, 8), claim) })).toBe(false);
    expect(verifyApproval(key, { ...claim, attestation: { ...signApproval(key, claim), sig: 'zz' } })).toBe(false);
    expect(verifyApproval(key, claim)).toBe(false);
    // a worker without the key never calls anything authenticated
    expect(verifyApproval(undefined, { ...claim, attestation: signApproval(key, claim) })).toBe(false);
  });

  it('the key file is created once, private, and read back the same; a worker never creates it', () => {
    const env = { KILN_HOME: mkdtempSync(join(tmpdir(), 'kiln-key-')) };
    expect(loadApprovalKey({ env })).toBeUndefined();
    const made = loadApprovalKey({ env, create: true })!;
    expect(made.length).toBe(32);
    expect(statSync(approvalKeyPath(env)).mode & 0o777).toBe(0o600);
    expect(loadApprovalKey({ env })!.equals(made)).toBe(true);
  });

  it('a key from the environment must be long enough', () => {
    expect(() => loadApprovalKey({ env: { KILN_APPROVAL_KEY: 'abcd' } })).toThrow(/at least 32 bytes/);
    expect(loadApprovalKey({ env: { KILN_APPROVAL_KEY: 'ab'.repeat(32) } })!.length).toBe(32);
  });

  it('who started a run: verifies for that execution of that run only, and never as an approval (nor the reverse)', () => {
    const c = { execution: 'exec-1', runId: 'r1', repo: '/srv/acme', user: 'alice', tenant: 'acme', issuedAt: claim.issuedAt };
    const start = signRunStart(key, c);
    const at = { execution: 'exec-1', runId: 'r1' };
    expect(verifyRunStart(key, at, start)).toBe(true);
    expect(verifyRunStart(key, { ...at, runId: 'r2' }, start)).toBe(false);
    // the same signed start sent to a new execution that reuses the run id
    expect(verifyRunStart(key, { ...at, execution: 'exec-2' }, start)).toBe(false);
    expect(verifyRunStart(key, { ...at, execution: 'exec-2' }, { ...start, execution: 'exec-2' })).toBe(false);
    for (const f of ['user', 'tenant', 'repo'] as const) expect(verifyRunStart(key, at, { ...start, [f]: 'mallory' })).toBe(false);
    expect(verifyRunStart(undefined, at, start)).toBe(false);
    // the claim signed before the execution existed (the input's requestedBy) verifies for none
    expect(verifyRunStart(key, { ...at, execution: '' }, signRunStart(key, { ...c, execution: '' }))).toBe(false);
    expect(verifyApproval(key, { ...claim, user: 'alice', attestation: start })).toBe(false);
    const approval = signApproval(key, { ...claim, user: 'alice' });
    expect(verifyRunStart(key, at, { ...c, sig: approval.sig })).toBe(false);
  });
});
