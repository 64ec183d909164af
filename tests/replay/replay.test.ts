/**
 * Recorded histories replayed against today's workflow code: a change that would break runs in
 * flight (a reordered activity, a new one without patched()) fails here, not in production.
 * Record new ones with `KILN_RECORD_HISTORIES=/tmp/h npx vitest run tests/workflow/<file>` and
 * keep the interesting shapes; keep old ones while runs of that shape may still be open. Every
 * history here was recorded by the baseline release, which removed every patch: a build meets
 * only histories of its own (docs/cluster.md, "A baseline release").
 */
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/worker.js';

const DIR = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));
const load = (file: string) => historyFromJSON(JSON.parse(readFileSync(join(DIR, file), 'utf8')));

describe('replay of recorded histories', () => {
  it('has recordings of every shape that matters', () => {
    expect(files.sort()).toEqual(
      expect.arrayContaining([
        'accept.json',
        'cancelled.json',
        'cancelled-during-model-call.json',
        'crash-after-edit.json',
        'crash-during-command.json',
        'crash-during-model-turn.json',
        'host-loss-rebuild.json',
        'compacted.json',
        'continued-as-new.json',
        'stuck.json',
        'hint.json',
        'malformed.json',
        'reject.json',
        'retry2.json',
        'revoked-session.json',
        'every-tool.json',
        'rate-limit.json',
        'unauthorized.json',
        'grant-for-run.json',
        'same-failure.json',
        'refused-input.json',
        'stale-verdict.json',
        'verified-tree.json',
        'pre-approval.json',
        'two-approvers.json',
        'run-ahead.json',
        'run-ahead-approvals.json',
        'turns-ahead.json',
        'turns-ahead-crash.json',
        'turns-ahead-stuck.json',
        'turns-ahead-over-budget.json',
        'turns-ahead-fault.json',
        'budget.json',
        'reflect-first.json',
        'fleet-attributes.json',
        'verified-tree.json',
        'baseline-apart.json',
        'baseline-apart-one-turn.json',
        'setup-approval.json',
        'setup-rejected.json',
        'patch-approval.json',
        'setup-approved-host-loss.json',
        'starter-signed.json',
        'review-changes-requested.json',
        'fan-out-first-wins.json',
        'budget-park.json',
        'budget-ledger.json',
        'budget-ledger-lease.json',
      ]),
    );
  });

  it.each(files)('%s replays against the current workflow code', async (file) => {
    const bundle = await workflowBundle();
    await Worker.runReplayHistory({ workflowBundle: bundle, replayName: file }, load(file), `replay-${file}`);
  });

  it("the budget ledger's release at a run's end is behind patched(): a run recorded before it carries no marker, one after it does", () => {
    const marked = (file: string) =>
      (
        JSON.parse(readFileSync(join(DIR, file), 'utf8')) as {
          events: Array<{ markerRecordedEventAttributes?: { details?: Record<string, { payloads: Array<{ data: string }> }> } }>;
        }
      ).events.some((e) =>
        Object.values(e.markerRecordedEventAttributes?.details ?? {}).some((d) =>
          d.payloads.some((p) => Buffer.from(p.data, 'base64').toString().includes('"budget-ledger-release"')),
        ),
      );
    expect(marked('budget-park.json')).toBe(true);
    expect(marked('budget.json')).toBe(false);
  });

  it('a history whose commands no longer match the code fails with a determinism error', async () => {
    const history = load('revoked-session.json');
    // as if the workflow had once scheduled a different first activity
    const scheduled = history.events!.find((e) => e.activityTaskScheduledEventAttributes)!;
    scheduled.activityTaskScheduledEventAttributes!.activityType = { name: 'somethingElse' };
    const bundle = await workflowBundle();
    await expect(Worker.runReplayHistory({ workflowBundle: bundle, replayName: 'mutated' }, history, 'replay-mutated')).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});
