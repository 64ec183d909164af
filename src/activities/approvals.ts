/**
 * Who answered an approval, checked where a key may be read: a decision that carries a signature
 * from `kiln serve` (src/auth/attestation.ts) counts as that server's authenticated user only when
 * the signature verifies for this run, this approval and this very decision. Anything else keeps
 * the kind its `by` earns (self-declared or os-user), with the reason the signature did not count.
 */
import { loadApprovalKey, verifyApproval, verifyOsUser, verifyRunStart } from '../auth/attestation.js';
import { identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import type { ApprovalAttestation, ApprovalDecision, StartAttestation } from '../shared/types.js';
import type { ActivityDeps } from './deps.js';

/** Names a person reads; a longer claim is no name anyone signed for. */
const MAX_NAME_CHARS = 200;

/** The worker's approval key, or why there is none to check a signature with. */
function workerKey(env: NodeJS.ProcessEnv): { key: Buffer } | { why: string } {
  try {
    // the worker only reads the key: one without it never counts a decision as authenticated
    const key = loadApprovalKey({ env });
    return key ? { key } : { why: 'this worker has no approval key (KILN_APPROVAL_KEY or $KILN_HOME/approval.key)' };
  } catch (err) {
    return { why: `this worker's approval key is unusable: ${(err as Error).message}` };
  }
}

type ApprovalDeps = Pick<ActivityDeps, 'env'>;

/**
 * `runId`, `execution` and `call` are the workflow's own (its id, its first execution's Temporal
 * run id, the hash it recorded for what is approved), never fields of the decision: a signature
 * for another run, execution or call does not verify.
 */
export async function identifyDecision(
  deps: ApprovalDeps,
  inp: { runId: string; execution?: string; call?: string; decision: ApprovalDecision },
): Promise<ApproverIdentity> {
  const d = inp.decision;
  const claimed = identifyApprover(d.by);
  const a = d.attestation;
  if (!a) return claimed;
  const unverified = (why: string): ApproverIdentity => ({ ...claimed, unverified: why });
  if (typeof a.user !== 'string' || typeof a.tenant !== 'string' || typeof a.issuedAt !== 'string') return unverified('the signature is malformed');
  if (!a.user.trim() || a.user.length > MAX_NAME_CHARS || a.tenant.length > MAX_NAME_CHARS) return unverified('the signed user or tenant is empty or too long');
  const k = workerKey(deps.env);
  if ('why' in k) return unverified(k.why);
  const ok = verifyApproval(k.key, {
    execution: inp.execution ?? '',
    runId: inp.runId,
    approvalId: d.approvalId,
    call: inp.call ?? '',
    approve: d.approve,
    scope: d.scope,
    attestation: a,
  });
  if (!ok) return unverified('the signature does not verify for this execution, approval, call and decision');
  return { kind: 'authenticated', name: a.user, tenant: a.tenant };
}

/**
 * Who started the run: authenticated only by a start `kiln serve` signed for this very execution
 * (the candidates are the startedBy signals the run received, first verified one wins). The
 * input's requestedBy is only the name claimed, recorded as self-declared when nothing verifies.
 */
export async function identifyStarter(
  deps: ApprovalDeps,
  inp: {
    runId: string;
    execution?: string;
    requestedBy: ApprovalAttestation;
    candidates?: StartAttestation[];
  },
): Promise<ApproverIdentity & { repo?: string }> {
  const claimed: ApproverIdentity = { kind: 'self-declared', name: String(inp.requestedBy?.user ?? 'unknown').slice(0, MAX_NAME_CHARS) };
  const k = workerKey(deps.env);
  if ('why' in k) return { ...claimed, unverified: k.why };
  const expect = { execution: inp.execution ?? '', runId: inp.runId };
  const good = (inp.candidates ?? []).find((c) => verifyRunStart(k.key, expect, c));
  if (!good) {
    const why = inp.candidates?.length
      ? 'no signed start verifies for this execution'
      : inp.execution === undefined
        ? 'the signature does not verify for this execution'
        : 'kiln serve sent no signed start to this execution';
    return { ...claimed, unverified: why };
  }
  return { kind: 'authenticated', name: good.user.slice(0, MAX_NAME_CHARS), tenant: good.tenant.slice(0, MAX_NAME_CHARS), repo: good.repo };
}

/**
 * An os-user claim as the audit records it: os-user only when the kiln CLI's signature verifies
 * with this worker's approval key for this execution and `subject`; self-declared otherwise, saying why.
 * The signature itself is never recorded.
 */
export function verifiedOsUser(
  env: NodeJS.ProcessEnv,
  run: { runId: string; execution?: string },
  subject: string,
  identity: ApproverIdentity,
): ApproverIdentity {
  const { osUserSig, ...rest } = identity;
  if (rest.kind !== 'os-user') return rest;
  const downgrade = (why: string): ApproverIdentity => ({ ...rest, kind: 'self-declared', unverified: why });
  const k = workerKey(env);
  if ('why' in k) return downgrade(k.why.replace('(KILN_APPROVAL_KEY or $KILN_HOME/approval.key)', 'to check the os-user tag with'));
  const claim = { execution: run.execution ?? '', runId: run.runId, subject, name: rest.name, user: rest.osUser ?? '', host: rest.host ?? '' };
  return verifyOsUser(k.key, claim, osUserSig)
    ? rest
    : downgrade("the os-user tag is not signed by a kiln CLI holding this worker's approval key for this execution and exactly this decision");
}
