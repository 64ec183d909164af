/**
 * Approvals that say who approved. The embedded dev server authenticates nobody, so a name sent
 * with a signal is only a claim. `kiln serve` authenticates its callers by token; when it
 * forwards a decision it signs what it vouches for (the execution, the approval, the exact call,
 * the decision, the user and tenant) with a key shared with the workers (HMAC-SHA256). The worker
 * checks the signature in an activity, against what the workflow itself recorded, before the
 * decision counts as `authenticated`: anyone who can reach Temporal can still send a signal, but
 * not one that names a user it cannot sign for, nor one signed for another execution or call.
 *
 * The key comes from KILN_APPROVAL_KEY (hex or base64, ≥ 32 bytes) or `$KILN_HOME/approval.key`,
 * created on first use with mode 0600. A server and the workers it talks to must share it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kilnHomeDir } from '../policy/trust.js';
import type { ApprovalAttestation, StartAttestation } from '../shared/types.js';
import { settingsFrom } from '../settings.js';

/**
 * What the server vouches for; every field is covered by the signature. `execution` is the
 * Temporal run id of the first execution of the run's chain: the Temporal server makes it, so a
 * new execution that reuses a closed run's id (or any other run) has another, and a signature
 * sent again to it does not verify. `call` is the sha256 the workflow recorded for exactly what
 * is approved (the tool call's name and input, the setup, the patch's tree): the same approval id
 * asking about another command does not verify either.
 */
export interface ApprovalClaim {
  execution: string;
  runId: string;
  approvalId: string;
  call: string;
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
  const given = settingsFrom(env).approvalKey;
  if (given) {
    const k = decodeKey(given);
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

/**
 * Field order fixed here, so server and worker sign the same bytes whatever the object order. The
 * leading tag is a domain: a signature of one kind never verifies as another kind, and the
 * signatures of earlier releases (which covered neither the execution nor the call) verify as none.
 */
function canonical(c: ApprovalClaim): string {
  return JSON.stringify(['approval/2', c.execution, c.runId, c.approvalId, c.call, c.approve, c.scope, c.user, c.tenant, c.issuedAt]);
}

const hmacHex = (key: Buffer, text: string): string => createHmac('sha256', key).update(text).digest('hex');

function sameHex(expected: string, given: unknown): boolean {
  if (typeof given !== 'string' || given.length !== expected.length || !/^[0-9a-f]+$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(given, 'hex'));
}

export function signApproval(key: Buffer, claim: ApprovalClaim): ApprovalAttestation {
  return { user: claim.user, tenant: claim.tenant, issuedAt: claim.issuedAt, sig: hmacHex(key, canonical(claim)) };
}

/** True only when the attestation was signed with `key` for exactly this execution, approval, call and decision. */
export function verifyApproval(
  key: Buffer | undefined,
  d: {
    execution: string;
    runId: string;
    approvalId: string;
    call: string;
    approve: boolean;
    scope?: 'once' | 'run';
    attestation?: ApprovalAttestation;
  },
): boolean {
  const a = d.attestation;
  if (!key || !a || !d.execution) return false;
  const expected = signApproval(key, {
    execution: d.execution,
    runId: d.runId,
    approvalId: d.approvalId,
    call: d.call,
    approve: d.approve,
    scope: d.scope ?? 'once',
    user: a.user,
    tenant: a.tenant,
    issuedAt: a.issuedAt,
  }).sig;
  return sameHex(expected, a.sig);
}

/**
 * Who started a run, for which tenant and on which repo: the server signs it after the start,
 * once Temporal has named the execution, and sends it to that execution (startedBySignal). The
 * run's input carries only a claim; this is what the worker checks before its audit names who
 * started the run, and what `kiln serve` reads back to decide whose run it is (never a search
 * attribute or the memo, which whoever starts an execution chooses).
 */
export type RunStartClaim = Omit<StartAttestation, 'sig'>;

function canonicalStart(c: RunStartClaim): string {
  return JSON.stringify(['run-start/2', c.execution, c.runId, c.repo, c.user, c.tenant, c.issuedAt]);
}

export function signRunStart(key: Buffer, claim: RunStartClaim): StartAttestation {
  return { ...claim, sig: hmacHex(key, canonicalStart(claim)) };
}

/** True only when `a` was signed with `key` for this very execution of run `runId`. */
export function verifyRunStart(key: Buffer | undefined, expect: { execution: string; runId: string }, a: StartAttestation | undefined): boolean {
  if (!key || !a || !expect.execution || a.execution !== expect.execution || a.runId !== expect.runId) return false;
  if ([a.repo, a.user, a.tenant, a.issuedAt].some((f) => typeof f !== 'string')) return false;
  return sameHex(hmacHex(key, canonicalStart(a)), a.sig);
}

/**
 * The kiln CLI's word that the OS account in an approver's `by` tag is the one it runs as. Signed
 * with the local approval key, which only that account (and root) can read: a tag anyone can type
 * into the Web UI or a raw signal does not verify. Bound to the execution and to what was decided
 * (one approval of one exact call, one pre-approved command, one kind of human decision), so a
 * tag copied from the history counts nowhere else.
 */
export interface OsUserClaim {
  /** the first execution's Temporal run id (see ApprovalClaim) */
  execution: string;
  runId: string;
  /** approverSubject() of the decision */
  subject: string;
  name: string;
  user: string;
  host: string;
}

/** 128 bits of the HMAC: the tag is shown with the name, and a shorter one is still unforgeable. */
export function signOsUser(key: Buffer, c: OsUserClaim): string {
  return hmacHex(key, JSON.stringify(['os-user/2', c.execution, c.runId, c.subject, c.name, c.user, c.host])).slice(0, 32);
}

export function verifyOsUser(key: Buffer | undefined, c: OsUserClaim, sig: string | undefined): boolean {
  if (!key || !sig || !c.execution) return false;
  return sameHex(signOsUser(key, c), sig);
}
