/**
 * Failures no retry can fix leave the activity as non-retryable ApplicationFailures, so Temporal
 * ends the run on the first attempt: a bad .kiln/policy.json (was retried 5 times) and a worker
 * without a model key (was retried 8 times over ~2 minutes while `kiln run` showed "planning").
 * Controls: the same calls with a good policy and a scripted model go through.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callPath } from '../../../src/activities/tool-results.js';
import { writeJsonAtomic } from '../../../src/store/run-files.js';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { repoWith, writeScript } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

async function prepared(model: string, env: NodeJS.ProcessEnv = process.env, steps: unknown[] = [{ text: 'done' }]) {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: model.replace('SCRIPT', writeScript(join(repo, '..'), 's', { steps })) });
  const acts = createActivities({ ...defaultDeps(env), hostQueue: 'unit-host' });
  const menv = new MockActivityEnvironment();
  await menv.run(acts.prepareWorkspace, input);
  return { repo, input, acts, menv };
}

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('failures that no retry can fix are not retried', () => {
  it('a bad .kiln/policy.json: prepareWorkspace fails non-retryable, naming the file; control: a valid one prepares and runs a tool', async () => {
    // the policy is fixed when the run is prepared (run.json): a bad file fails there, once
    const { repo, input, acts, menv } = await prepared('scripted:SCRIPT');
    await writeJsonAtomic(callPath(repo, input.runId, 'toolu_ok'), { id: 'toolu_ok', name: 'read_file', input: { path: 'a.txt' } });
    expect(await menv.run(acts.runTool, { runId: input.runId, repo, toolUseId: 'toolu_ok', grants: [] })).toMatchObject({ status: 'done', ok: true });

    const bad = repoWith({ 'a.txt': 'alpha\n', '.kiln/policy.json': '{ "protected": [' });
    const badInput = testInput({ repo: bad, model: input.model });
    const f = await failure(new MockActivityEnvironment().run(acts.prepareWorkspace, badInput));
    expect(f).toMatchObject({ type: 'PolicyConfigError', nonRetryable: true });
    expect(f.message).toMatch(/policy\.json: not valid JSON/);
  });

  it('no model key on the worker: agentTurn fails non-retryable with what to set; control: a scripted model answers', async () => {
    const ok = await prepared('scripted:SCRIPT');
    const res = await ok.menv.run(ok.acts.agentTurn, { runId: ok.input.runId, repo: ok.repo, turn: 1, attempt: 1 });
    expect(res.text).toBe('done');

    const { repo, input, acts, menv } = await prepared('claude-sonnet-5-5', { PATH: process.env.PATH, HOME: process.env.HOME });
    const f = await failure(menv.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 }));
    expect(f).toMatchObject({ type: 'ModelFatalError', nonRetryable: true });
    expect(f.message).toMatch(/no ANTHROPIC_API_KEY/);
  });

  it('a rate limit stays retryable, with the retry-after as the next delay', async () => {
    const { repo, input, acts, menv } = await prepared('scripted:SCRIPT', process.env, [{ error: { status: 429, retry_after_s: 2, times: 'always' } }]);
    const f = await failure(menv.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 }));
    expect(f).toMatchObject({ type: 'ModelRetryableError', nonRetryable: false, nextRetryDelay: 2000 });
  });
});
