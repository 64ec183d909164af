/**
 * The run's first look at its worktree is taken while the model answers the first turn, so the
 * first command finds it ready (on a big repo a first look hashes every file). It must be the
 * worktree as it is: the tree a fresh index makes of it, and the paths it changes.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { stateDir } from '../../../src/activities/run-files.js';
import { knownSnapshot } from '../../../src/activities/snapshot.js';
import type { PrepareResult } from '../../../src/activities/contracts.js';
import type { ModelClient } from '../../../src/model/index.js';
import { repoWith, treeThroughFreshIndex } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const saysDone: ModelClient = {
  scripted: true,
  model: 'fake',
  async create() {
    return {
      content: [{ type: 'text', text: 'looking', citations: null }] as never,
      stopReason: 'end_turn',
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      model: 'fake',
      costUsd: 0,
    };
  },
};

describe('the first look, beside the first model call', () => {
  it('is the worktree as the first turn found it, ready for the first command', async () => {
    const repo = repoWith({ 'a.txt': 'x\n', 'src/b.ts': 'export const b = 1;\n' });
    const input = testInput({ repo, model: 'fake' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => saysDone });
    const env = new MockActivityEnvironment();
    const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
    const state = stateDir(repo, input.runId);
    expect(await knownSnapshot(state)).toBeUndefined();
    // what setup (or a person) left in the worktree before the first turn counts as it is
    writeFileSync(join(prep.worktree, 'a.txt'), 'changed before the first turn\n');
    writeFileSync(join(prep.worktree, 'new.md'), 'new\n');

    await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 });
    const seen = await knownSnapshot(state);
    expect(seen?.tree).toBe(treeThroughFreshIndex(prep.worktree, prep.baseCommit));
    expect(seen?.changed).toEqual(['a.txt', 'new.md']);
  });

  it('control: a turn that takes a checkpoint (the worktree was changed) leaves the look to the command', async () => {
    const repo = repoWith({ 'a.txt': 'x\n' });
    const input = testInput({ repo, model: 'fake' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => saysDone });
    const env = new MockActivityEnvironment();
    await env.run(acts.prepareWorkspace, input);
    await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, checkpoint: true });
    expect(await knownSnapshot(stateDir(repo, input.runId))).toBeUndefined();
  });
});
