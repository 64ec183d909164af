/** audit.jsonl: who decided what, when — one redacted line per approval or human decision, chained (src/store/audit-chain.ts). */
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { checkRepoPlaces } from '../policy/run-request.js';
import { redact } from '../redact/index.js';
import { approverSubject, identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import { verifiedOsUser } from './approvals.js';
import type { ActivityDeps } from './deps.js';
import { auditGenesis, lastLine, sha256Hex, type AuditHead } from '../store/audit-chain.js';
import type { RunRef } from '../shared/contracts.js';
import { claimRunDir, runDir, writeWorkflowEvents } from '../store/run-files.js';

export interface AuditEntry {
  kind: 'approval' | 'human' | 'sandbox' | 'verification' | 'cancel' | 'pre-approval' | 'start';
  id?: string;
  action?: string;
  decision?: string;
  scope?: string;
  what?: string;
  hash?: string;
  by: string;
  note?: string;
  /** how the person was identified; filled here for approvals and human decisions */
  identity?: ApproverIdentity;
  /** an approval that needs more than one person: how many have approved so far, "1 of 2" */
  votes?: string;
  /** a pre-approval that was used: the approval it answered */
  answered?: string;
  /** a pre-approval: the exact command it approves (its os-user tag is signed for it) */
  command?: string;
}

/** A decision Kiln made itself (a timeout, a run option) has no person behind it to identify. */
const BY_KILN = new Set(['kiln', 'run option --sandbox off']);

export function auditFile(repo: string, runId: string): string {
  return join(runDir(repo, runId), 'audit.jsonl');
}

/** One writer at a time per file in this process: a retry and its first try must not both append. */
const writing = new Map<string, Promise<unknown>>();
function serialized<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const next = (writing.get(file) ?? Promise.resolve()).catch(() => undefined).then(fn);
  writing.set(file, next);
  return next;
}

export interface RecordAuditInput extends RunRef {
  entry: AuditEntry;
  /**
   * The chain's end as the run recorded it (null before its first line): the new line continues
   * from here, never from the file's last line, which anyone who can write the file chooses.
   */
  head: AuditHead | null;
  /** the first execution's Temporal run id: the chain's genesis and each line name it */
  execution?: string;
  /** the workflow's time of the decision, so a retried write makes the very same line */
  at?: string;
}

type AuditDeps = Pick<ActivityDeps, 'env'> & Partial<Pick<ActivityDeps, 'operator'>>;

/**
 * Appends the line that follows `head` and returns the new head, which the workflow keeps so
 * that verify can check the file against it. A file rewritten behind the run's back is not
 * followed: the line still names the recorded head as its `prev`, so the chain visibly breaks
 * where the file was changed. The line is a function of its input, so a retried write that
 * finds it already at the end does not write it twice.
 */
export async function recordAudit(deps: AuditDeps, inp: RecordAuditInput): Promise<AuditHead> {
  // the first line may come before the workspace is prepared: the operator's roots hold here too
  if (deps.operator?.repoRoots)
    checkRepoPlaces(
      [
        { what: 'repo', path: inp.repo },
        { what: 'run directory', path: join(inp.repo, '.kiln') },
      ],
      deps.operator,
    );
  await claimRunDir(inp.repo, inp.runId, inp.execution);
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const file = auditFile(inp.repo, inp.runId);
  return serialized(file, async () => {
    const run = { runId: inp.runId, execution: inp.execution };
    const entry =
      inp.entry.kind !== 'sandbox' && !BY_KILN.has(inp.entry.by)
        ? { ...inp.entry, identity: verifiedOsUser(deps.env, run, auditSubject(inp.entry), inp.entry.identity ?? identifyApprover(inp.entry.by)) }
        : inp.entry;
    const seq = (inp.head?.seq ?? 0) + 1;
    const prev = inp.head?.hash ?? auditGenesis(inp.runId, inp.execution);
    const at = inp.at ?? new Date().toISOString();
    const line = redact(JSON.stringify({ seq, prev, at, runId: inp.runId, ...(inp.execution ? { execution: inp.execution } : {}), ...entry }));
    const head = { seq, hash: sha256Hex(line) };
    await mkdir(dirname(file), { recursive: true });
    if (lastLine(await readFile(file, 'utf8').catch(() => ''))?.line !== line) await appendFile(file, `${line}\n`);
    return head;
  });
}

/** What an os-user tag on this line must have been signed for (approverSubject, with the fields the audit names them by). */
function auditSubject(e: AuditEntry): string {
  return approverSubject({ ...e, text: e.kind === 'human' ? e.note : undefined });
}
