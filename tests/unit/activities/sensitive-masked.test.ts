/**
 * The user's own sensitive globs reach the sandbox. A file that only the user's policy
 * ($KILN_HOME/policy.json) calls sensitive is masked in the run's commands and setup, through the
 * real activities and the real bwrap; the same file with no such policy, and an ordinary file,
 * stay readable.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { callPath } from '../../../src/activities/tool-results.js';
import { writeJsonAtomic } from '../../../src/store/run-files.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const secret = `kiln_canary_${randomBytes(6).toString('hex')}`;
const plain = `kiln_plain_${randomBytes(6).toString('hex')}`;
// found by name, not by value: known-value redaction would hide the value itself in any output
const FIND = `grep -rl -e ${secret} -e ${plain} . | sort`;

async function run(userPolicy: object | null) {
  const home = mkdtempSync(join(tmpdir(), 'kiln-test-home-'));
  if (userPolicy) writeFileSync(join(home, 'policy.json'), JSON.stringify(userPolicy));
  const repo = repoWith({ 'db.secret': `password=${secret}\n`, 'notes.txt': `${plain}\n` });
  const input = testInput({ repo, model: 'scripted:/dev/null', setup: [`${FIND} > setup-found.txt`], checks: [FIND] });
  const acts = createActivities({ ...defaultDeps({ ...process.env, KILN_HOME: home }), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input);
  expect(prep.ok).toBe(true);
  await writeJsonAtomic(callPath(repo, input.runId, 'toolu_1'), { id: 'toolu_1', name: 'run_command', input: { command: FIND, reason: 'look' } });
  const res = await env.run(acts.runTool, { runId: input.runId, repo, toolUseId: 'toolu_1', grants: [] });
  expect(res).toMatchObject({ status: 'done' });
  const output = readFileSync(join(repo, '.kiln', 'runs', input.runId, 'outputs', 'toolu_1.log'), 'utf8');
  // the checks' baseline ran at prepare, in a pristine checkout of the base
  const checks = readFileSync(join(repo, '.kiln', 'runs', input.runId, 'tests.log'), 'utf8');
  return { output, setup: readFileSync(join(prep.worktree, 'setup-found.txt'), 'utf8'), checks };
}

describe("the user's sensitive globs are masked in the run's sandbox", () => {
  it('a file only the user policy calls sensitive is unreadable by run_command, setup and the checks; notes.txt is read', async () => {
    const { output, setup, checks } = await run({ sensitive: ['**/*.secret'] });
    expect(output).toContain('./notes.txt');
    expect(output).not.toContain('db.secret');
    expect(setup).toBe('./notes.txt\n');
    expect(checks).toContain('./notes.txt');
    expect(checks).not.toContain('./db.secret');
  });

  it('without that policy the same file is an ordinary file, read like notes.txt', async () => {
    const { output, setup, checks } = await run(null);
    expect(output).toContain('./db.secret');
    expect(setup).toBe('./db.secret\n./notes.txt\n');
    expect(checks).toContain('./db.secret');
  });
});
