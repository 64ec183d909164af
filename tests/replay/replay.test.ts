/**
 * Recorded histories replayed against today's workflow code: a change that would break runs in
 * flight (a reordered activity, a new one without patched()) fails here, not in production.
 * Record new ones with `KILN_RECORD_HISTORIES=/tmp/h npx vitest run tests/workflow` and keep the
 * interesting shapes; keep old ones while runs of that shape may still be open.
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
        'revoked-session-batched.json',
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
        'run-ahead-crash-during-command.json',
        'run-ahead-approvals.json',
        'turns-ahead.json',
        'turns-ahead-crash.json',
        'turns-ahead-stuck.json',
        'baseline-apart.json',
        'baseline-apart-one-turn.json',
        'setup-approval.json',
        'setup-rejected.json',
        'patch-approval.json',
        'setup-approved-host-loss.json',
        'starter-signed.json',
      ]),
    );
  });

  it('keeps both sides of every patched() change: runs from before and after it', () => {
    /** whether the history records patched(name)'s marker */
    const marked = (f: string, name: string) =>
      (load(f).events ?? []).some((e) =>
        Buffer.from(e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data ?? [])
          .toString()
          .includes(name),
      );
    expect(marked('revoked-session.json', 'batch-read-tools')).toBe(false);
    expect(marked('revoked-session-batched.json', 'batch-read-tools')).toBe(true);
    expect(marked('revoked-session.json', 'fleet-search-attributes')).toBe(false);
    expect(marked('fleet-attributes.json', 'fleet-search-attributes')).toBe(true);
    // a well-formed request never records the marker: runs from before the check replay unchanged
    expect(marked('revoked-session.json', 'validate-run-input')).toBe(false);
    expect(marked('refused-input.json', 'validate-run-input')).toBe(true);
    const treeBound = (f: string) => (load(f).events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'currentTree');
    expect(treeBound('revoked-session.json')).toBe(false);
    expect(treeBound('verified-tree.json')).toBe(true);
    expect(treeBound('stale-verdict.json')).toBe(true);
    expect(marked('reject.json', 'two-approvers')).toBe(false);
    expect(marked('grant-for-run.json', 'two-approvers')).toBe(false);
    expect(marked('two-approvers.json', 'two-approvers')).toBe(true);
    // the starter checked first, against a start kiln serve signed for the execution (the startedBy signal)
    expect(marked('two-approvers.json', 'starter-bound-to-execution')).toBe(false);
    expect(marked('starter-signed.json', 'starter-bound-to-execution')).toBe(true);
    expect(marked('pre-approval.json', 'two-approvers')).toBe(true);
    // runs from before a turn ran its own calls replay with one activity per call
    for (const f of ['every-tool.json', 'crash-during-command.json', 'pre-approval.json']) expect(marked(f, 'turn-runs-ahead')).toBe(false);
    for (const f of ['run-ahead.json', 'run-ahead-crash-during-command.json', 'run-ahead-approvals.json']) expect(marked(f, 'turn-runs-ahead')).toBe(true);
    // and before an activity went on to take the next turns itself
    for (const f of ['run-ahead.json', 'run-ahead-crash-during-command.json', 'run-ahead-approvals.json']) expect(marked(f, 'turns-run-ahead')).toBe(false);
    for (const f of ['turns-ahead.json', 'turns-ahead-crash.json', 'turns-ahead-stuck.json']) expect(marked(f, 'turns-run-ahead')).toBe(true);
    // the baseline taken beside the first turns (takeBaseline) and, before it, inside prepareWorkspace
    expect(marked('revoked-session.json', 'baseline-beside-turns')).toBe(false);
    expect(marked('baseline-apart.json', 'baseline-beside-turns')).toBe(true);
    // setup the policy names waits for its approvers; a patch over approvals.patch too
    expect(marked('baseline-apart.json', 'setup-approval')).toBe(false);
    expect(marked('setup-approval.json', 'setup-approval')).toBe(true);
    expect(marked('verified-tree.json', 'patch-size-approval')).toBe(false);
    expect(marked('patch-approval.json', 'patch-size-approval')).toBe(true);
  });

  it.each(files)('%s replays against the current workflow code', async (file) => {
    const bundle = await workflowBundle();
    await Worker.runReplayHistory({ workflowBundle: bundle, replayName: file }, load(file), `replay-${file}`);
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
