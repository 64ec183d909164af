/** `kiln audit verify RUN`: recomputes the hash chain of a run's audit.jsonl (src/activities/audit-chain.ts). */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { verifyAuditChain } from '../../activities/audit-chain.js';
import { auditFile } from '../../activities/audit.js';
import { CliError, UsageError } from '../../shared/errors.js';

export async function auditVerify(repo: string, runId: string): Promise<string> {
  const file = auditFile(resolve(repo), runId);
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') throw new UsageError(`${file} does not exist: is ${runId} a run of ${repo}? (pass --repo DIR)`);
    throw e;
  });
  const r = verifyAuditChain(text, runId);
  if (r.ok) return `ok, ${r.entries} entries (${file})`;
  throw new CliError(`audit.jsonl line ${r.line} ${r.problem} (${file})`);
}
