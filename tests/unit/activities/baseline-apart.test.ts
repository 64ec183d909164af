/**
 * prepareWorkspace with `baselineApart` leaves the baseline to takeBaseline, which the workflow
 * runs beside the first turns: the baseline is still taken on the pristine base, and only once
 * however often the activity is retried. Real worktrees and sandbox.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const CHECK = 'node --test test/';
const repo = () =>
  repoWith({
    'src/add.js': 'module.exports = (a, b) => a - b;\n',
    'test/add.test.js':
      "const { test } = require('node:test');\nconst assert = require('node:assert');\nconst add = require('../src/add.js');\n" +
      "test('adds', () => assert.strictEqual(add(2, 3), 5));\ntest('adds zero', () => assert.strictEqual(add(2, 0), 2));\n",
  });
const runDir = (r: string, id: string) => join(r, '.kiln', 'runs', id);
const baselines = (r: string, id: string) =>
  readFileSync(join(runDir(r, id), 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => JSON.parse(l).type === 'baseline');

describe('the baseline apart from prepareWorkspace', () => {
  it('prepare leaves it out; takeBaseline takes it on the base, once, even after the worktree changed', async () => {
    const r = repo();
    const input = testInput({ repo: r, model: 'scripted:/dev/null', checks: [CHECK] });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
    const env = new MockActivityEnvironment();
    const prep = await env.run(acts.prepareWorkspace, input, undefined, { baselineApart: true });
    expect(prep.ok).toBe(true);
    expect(existsSync(join(runDir(r, input.runId), 'state', 'baseline.json'))).toBe(false);
    // the model's first edit, made while the baseline runs: the baseline does not see it
    writeFileSync(join(prep.worktree, 'src/add.js'), 'module.exports = (a, b) => a + b;\n');
    await env.run(acts.takeBaseline, { runId: input.runId, repo: r });
    const saved = JSON.parse(readFileSync(join(runDir(r, input.runId), 'state', 'baseline.json'), 'utf8')) as {
      base: string;
      checks: { command: string; results: { passed: number; failed: number } }[];
    };
    expect(saved.base).toBe(prep.baseCommit);
    expect(saved.checks).toEqual([expect.objectContaining({ command: CHECK, results: expect.objectContaining({ passed: 1, failed: 1 }) })]);
    // a retry (or a verify that got there first) finds it and runs nothing
    await env.run(acts.takeBaseline, { runId: input.runId, repo: r });
    expect(baselines(r, input.runId)).toHaveLength(1);
    expect(readFileSync(join(runDir(r, input.runId), 'tests.log'), 'utf8').match(/--- baseline:/g)).toHaveLength(1);
  });

  it('control: without the option prepareWorkspace takes the baseline itself, as runs started before it expect', async () => {
    const r = repo();
    const input = testInput({ repo: r, model: 'scripted:/dev/null', checks: [CHECK] });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
    await new MockActivityEnvironment().run(acts.prepareWorkspace, input);
    expect(existsSync(join(runDir(r, input.runId), 'state', 'baseline.json'))).toBe(true);
    expect(baselines(r, input.runId)).toHaveLength(1);
  });
});
