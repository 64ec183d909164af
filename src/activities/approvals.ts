/**
 * Who answered an approval, checked where a key may be read: a decision that carries a signature
 * from `kiln serve` (src/auth/attestation.ts) counts as that server's authenticated user only when
 * the signature verifies for this run, this approval and this very decision. Anything else keeps
 * the kind its `by` earns (self-declared or os-user), with the reason the signature did not count.
 */
import { loadApprovalKey, verifyApproval, verifyOsUser, verifyRunStart } from '../auth/attestation.js';
import { identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import type { ApprovalAttestation, ApprovalDecision } from '../shared/types.js';
import type { ActivityDeps } from './deps.js';

/** Names a person reads; a longer claim is no name anyone signed for. */
const MAX_NAME_CHARS = 200;

export function approvalActivities(deps: Pick<ActivityDeps, 'env'>) {
  /** `runId` is the workflow's own, never a field of the decision: a signature for another run does not verify. */
  async function identifyDecision(inp: { runId: string; decision: ApprovalDecision }): Promise<ApproverIdentity> {
    const d = inp.decision;
    const claimed = identifyApprover(d.by);
    const a = d.attestation;
    if (!a) return claimed;
    const unverified = (why: string): ApproverIdentity => ({ ...claimed, unverified: why });
    if (typeof a.user !== 'string' || typeof a.tenant !== 'string' || typeof a.issuedAt !== 'string') return unverified('the signature is malformed');
    if (!a.user.trim() || a.user.length > MAX_NAME_CHARS || a.tenant.length > MAX_NAME_CHARS)
      return unverified('the signed user or tenant is empty or too long');
    let key: Buffer | undefined;
    try {
      // the worker only reads the key: one without it never counts a decision as authenticated
      key = loadApprovalKey({ env: deps.env });
    } catch (err) {
      return unverified(`this worker's approval key is unusable: ${(err as Error).message}`);
    }
    if (!key) return unverified('this worker has no approval key (KILN_APPROVAL_KEY or $KILN_HOME/approval.key)');
    const ok = verifyApproval(key, { runId: inp.runId, approvalId: d.approvalId, approve: d.approve, scope: d.scope, attestation: a });
    if (!ok) return unverified('the signature does not verify for this run, approval and decision');
    return { kind: 'authenticated', name: a.user, tenant: a.tenant };
  }
  /** Who started the run, when a server signed it: authenticated only if it verifies for this run. */
  async function identifyStarter(inp: { runId: string; requestedBy: ApprovalAttestation }): Promise<ApproverIdentity> {
    const a = inp.requestedBy;
    const claimed: ApproverIdentity = { kind: 'self-declared', name: String(a.user).slice(0, MAX_NAME_CHARS) };
    let key: Buffer | undefined;
    try {
      key = loadApprovalKey({ env: deps.env });
    } catch (err) {
      return { ...claimed, unverified: `this worker's approval key is unusable: ${(err as Error).message}` };
    }
    if (!key) return { ...claimed, unverified: 'this worker has no approval key (KILN_APPROVAL_KEY or $KILN_HOME/approval.key)' };
    if (!verifyRunStart(key, inp.runId, a)) return { ...claimed, unverified: 'the signature does not verify for this run' };
    return { kind: 'authenticated', name: a.user, tenant: a.tenant };
  }
  return { identifyDecision, identifyStarter };
}

/**
 * An os-user claim as the audit records it: os-user only when the kiln CLI's signature verifies
 * with this worker's approval key for this run and `subject`; self-declared otherwise, saying why.
 * The signature itself is never recorded.
 */
export function verifiedOsUser(env: NodeJS.ProcessEnv, runId: string, subject: string, identity: ApproverIdentity): ApproverIdentity {
  const { osUserSig, ...rest } = identity;
  if (rest.kind !== 'os-user') return rest;
  const downgrade = (why: string): ApproverIdentity => ({ ...rest, kind: 'self-declared', unverified: why });
  let key: Buffer | undefined;
  try {
    key = loadApprovalKey({ env });
  } catch (err) {
    return downgrade(`this worker's approval key is unusable: ${(err as Error).message}`);
  }
  if (!key) return downgrade('this worker has no approval key to check the os-user tag with');
  const ok = verifyOsUser(key, { runId, subject, name: rest.name, user: rest.osUser ?? '', host: rest.host ?? '' }, osUserSig);
  return ok ? rest : downgrade("the os-user tag is not signed by a kiln CLI holding this worker's approval key");
}
