/** recordAudit as the workflow calls it: each write continues from the head the previous one returned, for one execution. */
import type { AuditHead } from '../../src/store/audit-chain.js';
import { recordAudit as record, type AuditEntry, type RecordAuditInput } from '../../src/activities/audit.js';

export const EXECUTION = 'exec-1';

export function auditWriter(repo: string, runId = 'r1', o: { env?: NodeJS.ProcessEnv; execution?: string } = {}) {
  const deps = { env: o.env ?? process.env };
  const recordAudit = (inp: RecordAuditInput) => record(deps, inp);
  let head: AuditHead | null = null;
  let before: AuditHead | null = null;
  let last: RecordAuditInput | undefined;
  let n = 0;
  return {
    /** one decision, as the run records it: the returned head is the run's record */
    async write(entry: AuditEntry): Promise<AuditHead> {
      before = head;
      last = { runId, repo, entry, head, execution: o.execution ?? EXECUTION, at: new Date(Date.UTC(2026, 11, 1, 10, 0, n++)).toISOString() };
      head = await recordAudit(last);
      return head;
    },
    /** the last write's activity retried with the very same input */
    retry: () => recordAudit(last!),
    get head() {
      return head;
    },
    /** the hash the last write chained from */
    get headBefore() {
      return before?.hash;
    },
  };
}
