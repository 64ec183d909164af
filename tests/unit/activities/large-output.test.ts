/** A command that prints megabytes: the log keeps it all (up to the cap) and the model is told what was kept. */
import { MockActivityEnvironment } from '@temporalio/testing';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { callPath, readStoredResult } from '../../../src/activities/tool-results.js';
import { writeJsonAtomic } from '../../../src/store/run-files.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const PRINT_5MB = "yes 'line of output 0123456789' | head -c 5000000";

async function run(env: NodeJS.ProcessEnv) {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null', checks: [PRINT_5MB] });
  const acts = createActivities({ ...defaultDeps({ ...process.env, ...env }), hostQueue: 'unit-host' });
  const mock = new MockActivityEnvironment();
  await mock.run(acts.prepareWorkspace, input);
  await writeJsonAtomic(callPath(repo, input.runId, 'toolu_big'), { id: 'toolu_big', name: 'run_command', input: { command: PRINT_5MB, reason: 'the check' } });
  const res = await mock.run(acts.runTool, { runId: input.runId, repo, toolUseId: 'toolu_big', grants: [] });
  const log = join(repo, '.kiln', 'runs', input.runId, 'outputs', 'toolu_big.log');
  return { res, log, stored: await readStoredResult(repo, input.runId, 'toolu_big') };
}

describe('large command output', () => {
  it('keeps all 5 MB in outputs/<id>.log and says so', async () => {
    const { res, log, stored } = await run({});
    expect(res).toMatchObject({ status: 'done', ok: true });
    expect(statSync(log).size).toBeGreaterThan(5_000_000);
    expect(readFileSync(log, 'utf8')).toContain('[exit code 0]');
    expect(stored!.content).toContain('the full output (5000000 bytes) is in');
  });

  it('under a 1 MB cap, says truthfully how much the log kept', async () => {
    const { log, stored } = await run({ KILN_OUTPUT_LOG_MAX_BYTES: String(1024 * 1024) });
    expect(statSync(log).size).toBeLessThan(1.1 * 1024 * 1024);
    expect(stored!.content).toMatch(/keeps the first 1048576 of 5000000 bytes/);
    expect(stored!.content).not.toContain('the full output is in');
  });
});
