/**
 * A run prepared on a real worktree, with its tool calls driven one by one through runTool
 * (MockActivityEnvironment): for activity tests that need the policy and the journal but no server.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, defaultDeps } from '../../src/activities/index.js';
import { writeJsonAtomic } from '../../src/store/run-files.js';
import { callPath } from '../../src/activities/tool-results.js';
import { repoWith } from './repo.js';
import { testInput } from './run-input.js';

export async function preparedRun(files: Record<string, string> = { 'a.txt': 'alpha\n' }) {
  const repo = repoWith(files);
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  await env.run(acts.prepareWorkspace, input);
  const call = async (id: string, name: string, callInput: unknown) => {
    await writeJsonAtomic(callPath(repo, input.runId, id), { id, name, input: callInput });
    return env.run(acts.runTool, { runId: input.runId, repo, toolUseId: id, grants: [] });
  };
  return { repo, input, call };
}
