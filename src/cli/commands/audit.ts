/** `kiln audit verify RUN`: recomputes the hash chain of a run's audit.jsonl and checks it ends where the run recorded (src/activities/audit-chain.ts). */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { compareAuditHead, verifyAuditChain } from '../../activities/audit-chain.js';
import { auditFile } from '../../activities/audit.js';
import type { RecordedHead } from '../../client/audit-head.js';
import { CliError, UsageError } from '../../shared/errors.js';

/** Without `recorded` (--offline) only the chain is checked, and the answer says the end was not. */
export async function auditVerify(repo: string, runId: string, recorded?: RecordedHead): Promise<string> {
  const file = auditFile(resolve(repo), runId);
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') throw new UsageError(`${file} does not exist: is ${runId} a run of ${repo}? (pass --repo DIR)`);
    throw e;
  });
  const r = verifyAuditChain(text, runId);
  if (!r.ok) throw new CliError(`audit.jsonl line ${r.line} ${r.problem} (${file})`);
  if (!recorded) return `ok, ${r.entries} entries, chain only: the head was not compared with the run's record (--offline) (${file})`;
  if (!recorded.head) return `ok, ${r.entries} entries, chain only: ${recorded.from} keeps no head (a run from before heads were kept) (${file})`;
  const h = compareAuditHead(text, recorded.head);
  if (!h.ok) throw new CliError(`audit.jsonl ${h.problem} (head from ${recorded.from}) (${file})`);
  return `ok, ${r.entries} entries, head matches the run's record (${recorded.from}) (${file})`;
}
