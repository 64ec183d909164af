/**
 * The `by` the kiln CLI sends with a decision: the name shown, tagged with the OS account the CLI
 * runs as and signed with the local approval key, so the worker's audit records `os-user` only
 * for a tag this CLI made, never for one typed into the Web UI or a raw signal.
 */
import { hostname, userInfo } from 'node:os';
import { loadApprovalKey, signOsUser } from '../auth/attestation.js';
import { approverSubject, cliApprover } from '../shared/approver.js';
import { UsageError } from '../shared/errors.js';

/** The OS account this CLI runs as: the default approver, and what the audit says vouched for a decision. */
function osAccount(env: NodeJS.ProcessEnv): { user: string; host: string } {
  let user = env.USER || 'unknown';
  try {
    user = userInfo().username;
  } catch {
    /* no passwd entry (containers): keep $USER */
  }
  return { user, host: hostname() };
}

/** `decision` is what the signature is bound to (approverSubject): one approval of run `runId`, one kind of human decision, a cancel. */
export function signedApprover(
  typed: string | undefined,
  runId: string,
  decision: { kind: string; id?: string; action?: string },
  env: NodeJS.ProcessEnv = process.env,
): string {
  let key: Buffer | undefined;
  try {
    // made on first use, mode 0600 under KILN_HOME: the embedded worker reads the same file
    key = loadApprovalKey({ env, create: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const os = osAccount(env);
  const subject = approverSubject(decision);
  return cliApprover(typed, os, key ? (name) => signOsUser(key, { runId, subject, name, user: os.user, host: os.host }) : undefined);
}
