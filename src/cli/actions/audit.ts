/** `kiln audit verify RUN`: recomputes the hash chain of a run's audit.jsonl and checks it ends where the run recorded (src/activities/audit-chain.ts). */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { auditExecution, compareAuditHead, verifyAuditChain } from '../../store/audit-chain.js';
import { auditFile } from '../../activities/audit.js';
import type { RecordedHead } from '../../client/audit-head.js';
import { CliError, UsageError } from '../../shared/errors.js';

/**
 * The exit code of an audit that shows no edit but cannot be shown whole: its chain holds, but no
 * record outside the file says where it ends, so a cut or appended line would not be seen.
 */
export const UNVERIFIED_EXIT = 3;

/** The execution an audit.jsonl names (its first line's), for reading that execution's head; undefined when the file has none. */
export async function auditFileExecution(repo: string, runId: string): Promise<string | undefined> {
  return auditExecution(await readFile(auditFile(resolve(repo), runId), 'utf8').catch(() => ''));
}

/** Without `recorded` (--offline) only the chain is checked: that is no verdict, and it exits UNVERIFIED_EXIT. */
export async function auditVerify(repo: string, runId: string, recorded?: RecordedHead): Promise<string> {
  const file = auditFile(resolve(repo), runId);
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') throw new UsageError(`${file} does not exist: is ${runId} a run of ${repo}? (pass --repo DIR)`);
    throw e;
  });
  const r = verifyAuditChain(text, runId);
  if (!r.ok) throw new CliError(`audit.jsonl line ${r.line} ${r.problem} (${file})`);
  const unverified = (why: string) =>
    new CliError(
      `unverified: the chain of ${r.entries} entries holds, but ${why}: lines cut from the end or added to it would not show (${file})`,
      UNVERIFIED_EXIT,
    );
  if (!recorded) throw unverified("the head was not compared with the run's record (--offline)");
  if (r.execution && recorded.execution && r.execution !== recorded.execution)
    throw new CliError(`audit.jsonl names execution ${r.execution}, but ${recorded.from} is execution ${recorded.execution} (${file})`);
  if (!recorded.head) throw unverified(`${recorded.from} keeps no head for it (an execution that wrote no audit line, or one from before heads were kept)`);
  const h = compareAuditHead(text, recorded.head);
  if (!h.ok) throw new CliError(`audit.jsonl ${h.problem} (head from ${recorded.from}) (${file})`);
  return `ok, ${r.entries} entries, head matches the run's record (${recorded.from}) (${file})`;
}
