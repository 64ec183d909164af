/** audit.jsonl: who decided what, when — one redacted line per approval or human decision. */
import { join } from 'node:path';
import type { RunRef } from './contracts.js';
import { appendJsonl, runDir, stateDir, readJson, writeJsonAtomic, writeWorkflowEvents } from './run-files.js';

export interface AuditEntry {
  kind: 'approval' | 'human' | 'sandbox' | 'cancel' | 'pre-approval';
  id?: string;
  action?: string;
  decision?: string;
  scope?: string;
  what?: string;
  hash?: string;
  by: string;
  note?: string;
}

export function auditActivities() {
  async function recordAudit(inp: RunRef & { entry: AuditEntry }): Promise<void> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    // one line per decision even when the activity is retried
    const key = `${inp.entry.kind}:${inp.entry.id ?? ''}:${inp.entry.action ?? inp.entry.decision ?? ''}`;
    const seenFile = join(stateDir(inp.repo, inp.runId), 'audit-keys.json');
    const seen = (await readJson<string[]>(seenFile)) ?? [];
    if (seen.includes(key) && inp.entry.kind !== 'human') return;
    await appendJsonl(join(runDir(inp.repo, inp.runId), 'audit.jsonl'), { at: new Date().toISOString(), runId: inp.runId, ...inp.entry });
    await writeJsonAtomic(seenFile, [...seen, key]);
  }
  return { recordAudit };
}
