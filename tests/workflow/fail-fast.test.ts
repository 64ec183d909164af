/**
 * On the real dev server: a run whose model key is missing on the worker, or whose
 * .kiln/policy.json is broken, ends blocked on the first attempt of the failing activity, with
 * the reason named (it used to retry 8 and 5 times first).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelClient } from '../../src/model/index.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { outcome } from '../../src/client/runs.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  // the worker's environment has no ANTHROPIC_API_KEY
  t = await workflowTestEnv('kiln-fail-fast-tests', { model: (spec, runId) => createModelClient({ spec, runId, env: { PATH: process.env.PATH } }) });
});
afterAll(async () => {
  await t?.stop();
});

/** The attempt numbers at which each activity type last started. */
async function attempts(h: RunHandle): Promise<Record<string, number>> {
  const events = (await h.fetchHistory()).events ?? [];
  const typeOf = new Map<string, string>();
  const out: Record<string, number> = {};
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) typeOf.set(String(e.eventId), s.activityType?.name ?? '');
    const st = e.activityTaskStartedEventAttributes;
    if (st) out[typeOf.get(String(st.scheduledEventId)) ?? '?'] = Math.max(out[typeOf.get(String(st.scheduledEventId)) ?? '?'] ?? 0, st.attempt ?? 0);
  }
  return out;
}

describe('failures no retry can fix end the run at once', () => {
  it('no model key on the worker: blocked after one agentTurn attempt, naming ANTHROPIC_API_KEY', async () => {
    const started = Date.now();
    const h = await t.start(testInput({ repo: repoWith({ 'a.txt': 'a\n' }), model: 'claude-sonnet-5-5' }));
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/ModelFatalError: .*no ANTHROPIC_API_KEY/);
    expect((await attempts(h)).agentTurn).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("a broken .kiln/policy.json: blocked after one prepareWorkspace attempt (the run's policy is fixed there), naming the file", async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    mkdirSync(join(repo, '.kiln'), { recursive: true });
    writeFileSync(join(repo, '.kiln', 'policy.json'), '{ "protected": [');
    const script = writeScript(join(repo, '..'), 'read', {
      steps: [{ tool_use: [{ name: 'read_file', input: { path: 'a.txt' } }] }, { text: 'never reached' }],
    });
    const h = await t.start(testInput({ repo, model: `scripted:${script}` }));
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/PolicyConfigError: .*policy\.json/);
    const tries = await attempts(h);
    expect(tries.prepareWorkspace).toBe(1);
    expect(tries.runTool).toBeUndefined();
  });
});
