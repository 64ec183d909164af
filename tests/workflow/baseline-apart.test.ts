/**
 * The baseline (the checks on the pristine base) runs beside the model's first turns, not before
 * them: a run reaches the model while a slow baseline is still running, and its verdict is still
 * judged against that baseline — on the real dev server, real worktrees and sandbox; only the
 * model is scripted.
 */
import proto from '@temporalio/proto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcome } from '../../src/client/runs.js';
import { statusQuery } from '../../src/shared/messages.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-baseline-apart');
});
afterAll(async () => {
  await t?.stop();
});

/** seconds the check sleeps while the bug is in the code: only the baseline, on the base, sees it */
const BASE_SLEEP_S = 6;
const CHECK = 'sh check.sh';
/** `adds` fails on the base and must pass (fail-to-pass); `adds zero` passes there and must keep passing */
const addRepo = () =>
  repoWith({
    'package.json': '{"name":"add","private":true}\n',
    'src/add.js': 'module.exports = (a, b) => a - b;\n',
    'test/add.test.js':
      "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst add = require('../src/add.js');\n" +
      "test('adds', () => assert.strictEqual(add(2, 3), 5));\ntest('adds zero', () => assert.strictEqual(add(2, 0), 2));\n",
    'check.sh': `if grep -q 'a - b' src/add.js; then sleep ${BASE_SLEEP_S}; fi\nnode --test test/\n`,
  });
const edit = (new_string: string) => ({ name: 'edit', input: { path: 'src/add.js', old_string: 'a - b', new_string } });
const check = { name: 'run_command', input: { command: CHECK, reason: 'the checks' } };
const finish = { name: 'finish', input: { summary: 'done' } };
const script = (repo: string, name: string, steps: unknown[]) => writeScript(join(repo, '..'), name, { name, steps });

const { EventType } = proto.temporal.api.enums.v1;
type Event = proto.temporal.api.history.v1.IHistoryEvent;
const at = (e: Event) => Number(e.eventTime!.seconds) * 1000 + (e.eventTime!.nanos ?? 0) / 1e6;

/** When each activity of the run was started and ended, by type, in history order. */
async function activityTimes(h: RunHandle): Promise<Record<string, { started: number[]; ended: number[] }>> {
  const { events = [] } = await h.fetchHistory();
  const typeOf = new Map<number, string>();
  const out: Record<string, { started: number[]; ended: number[] }> = {};
  const slot = (id: unknown) => (out[typeOf.get(Number(id))!] ??= { started: [], ended: [] });
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      typeOf.set(Number(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name!);
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) slot(e.activityTaskStartedEventAttributes!.scheduledEventId).started.push(at(e));
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) slot(e.activityTaskCompletedEventAttributes!.scheduledEventId).ended.push(at(e));
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED) slot(e.activityTaskCanceledEventAttributes!.scheduledEventId).ended.push(at(e));
  }
  return out;
}

const baselineEvents = (dir: string) =>
  readFileSync(join(dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; checks?: { command: string; passed: number; failed: number; failing: string[] }[] })
    .filter((e) => e.type === 'baseline');

describe('the baseline beside the first turns', () => {
  it('a slow baseline does not hold back the first model turn; the verdict still waits for it and grades fail-to-pass', async () => {
    const repo = addRepo();
    const input = testInput({
      repo,
      checks: [CHECK],
      model: `scripted:${script(repo, 'fix', [{ tool_use: [edit('a + b')] }, { tool_use: [check] }, { tool_use: [finish] }])}`,
    });
    const h = await t.start(input);
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');

    const acts = await activityTimes(h);
    // the model was asked before the baseline began, let alone ended: it is off the first turn's
    // path, and no turn waited for it (the turns may all ride in the first activity)
    expect(acts.agentTurn!.started[0]!).toBeLessThan(acts.takeBaseline!.started[0]!);
    expect(acts.agentTurn!.ended.at(-1)!).toBeLessThan(acts.takeBaseline!.ended[0]!);
    // and the verdict was not taken before the baseline it is judged against
    expect(acts.verify!.started[0]!).toBeGreaterThan(acts.takeBaseline!.ended[0]!);

    // taken once (verify found it), on the base: `adds` failed there, `adds zero` passed
    const base = baselineEvents(r.artifactsDir);
    expect(base).toHaveLength(1);
    expect(base[0]!.checks).toEqual([expect.objectContaining({ command: CHECK, passed: 1, failed: 1, failing: [expect.stringMatching(/adds$/)] })]);
    const st = await h.query(statusQuery);
    expect(st.verdict).toMatchObject({ pass: true, checks: [expect.objectContaining({ command: CHECK, passed: true })] });
  });

  it('a model done in one turn: the verify starts the baseline itself and judges against it', async () => {
    const repo = addRepo();
    const input = testInput({
      repo,
      checks: [CHECK],
      model: `scripted:${script(repo, 'one-turn', [{ tool_use: [edit('a + b'), check, finish] }])}`,
    });
    const h = await t.start(input);
    const r = await outcome(h);
    expect(r).toMatchObject({ state: 'succeeded', turns: 1 });
    const acts = await activityTimes(h);
    expect(acts.takeBaseline!.started).toHaveLength(1);
    expect(acts.verify!.started[0]!).toBeGreaterThan(acts.takeBaseline!.ended[0]!);
    expect(baselineEvents(r.artifactsDir)).toEqual([
      expect.objectContaining({ checks: [expect.objectContaining({ passed: 1, failed: 1, failing: [expect.stringMatching(/adds$/)] })] }),
    ]);
  });

  it('attack: a change that stops the tests from running fails against the baseline taken beside the turns', async () => {
    const repo = addRepo();
    const input = testInput({
      repo,
      checks: [CHECK],
      maxAttempts: 1,
      // the test file's process ends before a single test is reported
      model: `scripted:${script(repo, 'silence', [{ tool_use: [edit('process.exit(0)')] }, { tool_use: [check] }, { tool_use: [finish] }])}`,
    });
    const h = await t.start(input);
    const st = await t.waitFor(h, (s) => ['needs_human', 'succeeded', 'blocked'].includes(s.phase), 120_000);
    expect(st.phase).toBe('needs_human');
    // only the baseline knows that two tests ran on the base
    expect(st.verdict?.summary).toMatch(/ran on the base did not run|fewer tests ran than on the base/);
    expect(baselineEvents(join(repo, '.kiln', 'runs', input.runId))).toHaveLength(1);
    await h.cancel();
  });

  it('a run that ends while its baseline runs stops the baseline first: nothing of the run is written after its end', async () => {
    const repo = addRepo();
    const input = testInput({
      repo,
      checks: [CHECK],
      // a malformed call ends the chain of turns run ahead (the baseline starts once the run has
      // seen turn 2); turn 3 is refused twice (retried 1 s, then 2 s later) and turn 4 asks a
      // script that has ended: the run is blocked while the 6 s baseline sleeps
      model: `scripted:${script(repo, 'ends-early', [
        { tool_use: [edit('a + b')] },
        { tool_use: [{ name: 'no_such_tool', input: {} }] },
        { error: { status: 500, times: 2 }, tool_use: [edit('a + b + 0')] },
      ])}`,
    });
    const h = await t.start(input);
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    const dir = join(repo, '.kiln', 'runs', input.runId);
    const acts = await activityTimes(h);
    // the baseline was running, and its cancel came back before the run ended
    expect(acts.takeBaseline!.started).toHaveLength(1);
    expect(acts.takeBaseline!.ended).toHaveLength(1);
    const { events = [] } = await h.fetchHistory();
    const canceled = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED);
    const closed = events.findIndex(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED || e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    );
    expect(canceled).toBeGreaterThan(0);
    expect(canceled).toBeLessThan(closed);
    // longer than the check would have slept: a baseline left running would have written by now
    const files = () => readFileSync(join(dir, 'events.jsonl'), 'utf8');
    const before = files();
    await new Promise((res) => setTimeout(res, (BASE_SLEEP_S + 2) * 1000));
    expect(files()).toBe(before);
    expect(baselineEvents(dir)).toHaveLength(0);
    // a killed check is not a baseline: none is kept for a later verify to trust
    expect(existsSync(join(dir, 'state', 'baseline.json'))).toBe(false);
  });
});
