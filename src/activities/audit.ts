/** audit.jsonl: who decided what, when — one redacted line per approval or human decision, chained (./audit-chain.ts). */
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { redact } from '../redact/index.js';
import { approverSubject, identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import { verifiedOsUser } from './approvals.js';
import type { ActivityDeps } from './deps.js';
import { auditGenesis, auditHeadOf, lastLine, sha256Hex, type AuditHead } from './audit-chain.js';
import type { RunRef } from './contracts.js';
import { runDir, stateDir, readJson, writeJsonAtomic, writeWorkflowEvents } from './run-files.js';

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
}

/** A decision Kiln made itself (a timeout, a run option) has no person behind it to identify. */
const BY_KILN = new Set(['kiln', 'run option --sandbox off']);

export function auditFile(repo: string, runId: string): string {
  return join(runDir(repo, runId), 'audit.jsonl');
}

/** One writer at a time per file in this process: two lines written at once would both chain to the same head. */
const writing = new Map<string, Promise<unknown>>();
function serialized<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const next = (writing.get(file) ?? Promise.resolve()).catch(() => undefined).then(fn);
  writing.set(file, next);
  return next;
}

export function auditActivities(deps: Pick<ActivityDeps, 'env'> = { env: process.env }) {
  /** Returns the chain's new head, which the workflow keeps so that verify can see the file's end was not changed. */
  async function recordAudit(inp: RunRef & { entry: AuditEntry }): Promise<AuditHead> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    const file = auditFile(inp.repo, inp.runId);
    return serialized(file, async () => {
      // one line per decision (and per person, when several decide one approval) even when the activity is retried
      const key = `${inp.entry.kind}:${inp.entry.id ?? ''}:${inp.entry.action ?? inp.entry.decision ?? ''}:${inp.entry.by}:${inp.entry.answered ?? ''}`;
      const seenFile = join(stateDir(inp.repo, inp.runId), 'audit-keys.json');
      const seen = (await readJson<string[]>(seenFile)) ?? [];
      // a retry whose line is already written: the line is the file's last one (the workflow awaits each write)
      if (seen.includes(key) && inp.entry.kind !== 'human') return auditHeadOf(await readFile(file, 'utf8').catch(() => '')) ?? { seq: 0, hash: '' };
      const entry =
        inp.entry.kind !== 'sandbox' && !BY_KILN.has(inp.entry.by)
          ? { ...inp.entry, identity: verifiedOsUser(deps.env, inp.runId, approverSubject(inp.entry), inp.entry.identity ?? identifyApprover(inp.entry.by)) }
          : inp.entry;
      const head = lastLine(await readFile(file, 'utf8').catch(() => ''));
      const prev = head ? sha256Hex(head.line) : auditGenesis(inp.runId);
      const line = redact(JSON.stringify({ seq: (head?.count ?? 0) + 1, prev, at: new Date().toISOString(), runId: inp.runId, ...entry }));
      await mkdir(dirname(file), { recursive: true });
      await appendFile(file, `${line}\n`);
      await writeJsonAtomic(seenFile, [...seen, key]);
      return { seq: (head?.count ?? 0) + 1, hash: sha256Hex(line) };
    });
  }
  return { recordAudit };
}
