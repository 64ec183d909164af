/**
 * The `by` the kiln CLI sends with a decision: the name shown, tagged with the OS account the CLI
 * runs as and signed with the local approval key, so the worker's audit records `os-user` only
 * for a tag this CLI made, never for one typed into the Web UI or a raw signal — and only for the
 * execution and exactly the decision it was made for (approverSubject).
 */
import type { WorkflowHandle } from '@temporalio/client';
import { hostname, userInfo } from 'node:os';
import { loadApprovalKey, signOsUser } from '../auth/attestation.js';
import { approverSubject, cliApprover } from '../shared/approver.js';
import { UsageError } from '../shared/errors.js';
import { readState } from './runs.js';

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

/** What an os-user tag is bound to: one approval of one call, one pre-approved command, one human decision, a cancel. */
export interface TaggedDecision {
  kind: 'approval' | 'pre-approval' | 'human' | 'cancel';
  id?: string;
  /** an approval: the hash the run recorded for the call it asks about */
  hash?: string;
  /** a pre-approval: the exact command, and its scope */
  command?: string;
  scope?: 'once' | 'run';
  /** a human decision: the action and its text */
  action?: string;
  text?: string;
}

export function signedApprover(
  typed: string | undefined,
  run: { runId: string; execution: string },
  decision: TaggedDecision,
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
  return cliApprover(typed, os, key ? (name) => signOsUser(key, { ...run, subject, name, user: os.user, host: os.host }) : undefined);
}

/**
 * The tag for a decision on the run behind `handle`: its execution from Temporal, and for an
 * approval the hash of the call the run is asking about (from its status). A run that does not
 * answer gives no hash: the tag then verifies for nothing, and the decision is self-declared.
 */
export async function approverFor(
  handle: WorkflowHandle,
  typed: string | undefined,
  decision: TaggedDecision,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const d = await handle.describe();
  const execution = d.raw.workflowExecutionInfo?.firstRunId || d.runId;
  let hash = decision.hash;
  if (decision.kind === 'approval' && hash === undefined) {
    const st = await readState(handle as Parameters<typeof readState>[0]);
    hash = st?.pendingApprovals.find((a) => a.id === decision.id)?.hash;
  }
  return signedApprover(typed, { runId: handle.workflowId, execution }, { ...decision, ...(hash !== undefined ? { hash } : {}) }, env);
}
