/** audit.jsonl: who decided what, when — one redacted line per approval or human decision. */
import { join } from 'node:path';
import { identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import type { RunRef } from './contracts.js';
import { appendJsonl, runDir, stateDir, readJson, writeJsonAtomic, writeWorkflowEvents } from './run-files.js';

export interface AuditEntry {
  kind: 'approval' | 'human' | 'sandbox' | 'verification' | 'cancel' | 'pre-approval';
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
}

/** A decision Kiln made itself (a timeout, a run option) has no person behind it to identify. */
const BY_KILN = new Set(['kiln', 'run option --sandbox off']);

export function auditActivities() {
  async function recordAudit(inp: RunRef & { entry: AuditEntry }): Promise<void> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    // one line per decision even when the activity is retried
    const key = `${inp.entry.kind}:${inp.entry.id ?? ''}:${inp.entry.action ?? inp.entry.decision ?? ''}`;
    const seenFile = join(stateDir(inp.repo, inp.runId), 'audit-keys.json');
    const seen = (await readJson<string[]>(seenFile)) ?? [];
    if (seen.includes(key) && inp.entry.kind !== 'human') return;
    const entry =
      inp.entry.kind !== 'sandbox' && !BY_KILN.has(inp.entry.by) ? { ...inp.entry, identity: inp.entry.identity ?? identifyApprover(inp.entry.by) } : inp.entry;
    await appendJsonl(join(runDir(inp.repo, inp.runId), 'audit.jsonl'), { at: new Date().toISOString(), runId: inp.runId, ...entry });
    await writeJsonAtomic(seenFile, [...seen, key]);
  }
  return { recordAudit };
}
