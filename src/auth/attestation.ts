/**
 * Approvals that say who approved. The embedded dev server authenticates nobody, so a name sent
 * with a signal is only a claim. `kiln serve` authenticates its callers by token; when it
 * forwards a decision it signs what it vouches for (run, approval, decision, user, tenant) with
 * a key shared with the workers (HMAC-SHA256). The worker checks the signature in an activity
 * before the decision counts as `authenticated`: anyone who can reach Temporal can still send a
 * signal, but not one that names a user it cannot sign for.
 *
 * The key comes from KILN_APPROVAL_KEY (hex or base64, ≥ 32 bytes) or `$KILN_HOME/approval.key`,
 * created on first use with mode 0600. A server and the workers it talks to must share it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kilnHomeDir } from '../policy/trust.js';
import type { ApprovalAttestation } from '../shared/types.js';

/** What the server vouches for; every field is covered by the signature. */
export interface ApprovalClaim {
  runId: string;
  approvalId: string;
  approve: boolean;
  scope: 'once' | 'run';
  user: string;
  tenant: string;
  /** ISO time the server signed it */
  issuedAt: string;
}

const MIN_KEY_BYTES = 32;

function decodeKey(text: string): Buffer | undefined {
  const t = text.trim();
  const buf = /^[0-9a-f]+$/i.test(t) && t.length % 2 === 0 ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  return buf.length >= MIN_KEY_BYTES ? buf : undefined;
}

export function approvalKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnHomeDir(env), 'approval.key');
}

/**
 * The shared approval key. `create` (the server, `kiln token`) makes one when none exists; a
 * worker only reads it, so a worker without the key never counts a decision as authenticated.
 */
export function loadApprovalKey(opts: { env?: NodeJS.ProcessEnv; create?: boolean } = {}): Buffer | undefined {
  const env = opts.env ?? process.env;
  if (env.KILN_APPROVAL_KEY) {
    const k = decodeKey(env.KILN_APPROVAL_KEY);
    if (!k) throw new Error(`KILN_APPROVAL_KEY must be at least ${MIN_KEY_BYTES} bytes, hex or base64`);
    return k;
  }
  const file = approvalKeyPath(env);
  try {
    return decodeKey(readFileSync(file, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || !opts.create) return undefined;
  }
  mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
  const key = randomBytes(MIN_KEY_BYTES);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}

/** Field order fixed here, so server and worker sign the same bytes whatever the object order. */
function canonical(c: ApprovalClaim): string {
  return JSON.stringify([c.runId, c.approvalId, c.approve, c.scope, c.user, c.tenant, c.issuedAt]);
}

export function signApproval(key: Buffer, claim: ApprovalClaim): ApprovalAttestation {
  const sig = createHmac('sha256', key).update(canonical(claim)).digest('hex');
  return { user: claim.user, tenant: claim.tenant, issuedAt: claim.issuedAt, sig };
}

/** True only when the attestation was signed with `key` for exactly this decision. */
export function verifyApproval(
  key: Buffer | undefined,
  d: { runId: string; approvalId: string; approve: boolean; scope?: 'once' | 'run'; attestation?: ApprovalAttestation },
): boolean {
  const a = d.attestation;
  if (!key || !a || typeof a.sig !== 'string' || !/^[0-9a-f]{64}$/.test(a.sig)) return false;
  const expected = signApproval(key, {
    runId: d.runId,
    approvalId: d.approvalId,
    approve: d.approve,
    scope: d.scope ?? 'once',
    user: a.user,
    tenant: a.tenant,
    issuedAt: a.issuedAt,
  }).sig;
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(a.sig, 'hex'));
}

/**
 * Who started a run: the server signs the run id and the authenticated user, so the audit's
 * first line names a person the worker could check, not a field anyone could type into an input.
 * A domain tag keeps a start signature from ever verifying as an approval, and the reverse.
 */
export interface RunStartClaim {
  runId: string;
  user: string;
  tenant: string;
  issuedAt: string;
}

function canonicalStart(c: RunStartClaim): string {
  return JSON.stringify(['run-start', c.runId, c.user, c.tenant, c.issuedAt]);
}

export function signRunStart(key: Buffer, claim: RunStartClaim): ApprovalAttestation {
  const sig = createHmac('sha256', key).update(canonicalStart(claim)).digest('hex');
  return { user: claim.user, tenant: claim.tenant, issuedAt: claim.issuedAt, sig };
}

export function verifyRunStart(key: Buffer | undefined, runId: string, a: ApprovalAttestation | undefined): boolean {
  if (!key || !a || typeof a.sig !== 'string' || !/^[0-9a-f]{64}$/.test(a.sig)) return false;
  const expected = signRunStart(key, { runId, user: a.user, tenant: a.tenant, issuedAt: a.issuedAt }).sig;
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(a.sig, 'hex'));
}

/**
 * The kiln CLI's word that the OS account in an approver's `by` tag is the one it runs as. Signed
 * with the local approval key, which only that account (and root) can read: a tag anyone can type
 * into the Web UI or a raw signal does not verify. Bound to the run and to what was decided (one
 * approval, one kind of human decision), so a tag copied from the history counts nowhere else.
 */
export interface OsUserClaim {
  runId: string;
  /** approverSubject() of the decision */
  subject: string;
  name: string;
  user: string;
  host: string;
}

/** 128 bits of the HMAC: the tag is shown with the name, and a shorter one is still unforgeable. */
export function signOsUser(key: Buffer, c: OsUserClaim): string {
  return createHmac('sha256', key)
    .update(JSON.stringify(['os-user', c.runId, c.subject, c.name, c.user, c.host]))
    .digest('hex')
    .slice(0, 32);
}

export function verifyOsUser(key: Buffer | undefined, c: OsUserClaim, sig: string | undefined): boolean {
  if (!key || !sig || !/^[0-9a-f]{32}$/.test(sig)) return false;
  return timingSafeEqual(Buffer.from(signOsUser(key, c), 'hex'), Buffer.from(sig, 'hex'));
}
