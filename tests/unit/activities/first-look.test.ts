/**
 * The run's first look at its worktree starts when prepare has set the worktree up, and the first
 * model turn waits for it, so the first command finds it ready (on a big repo a first look hashes
 * every file). It must be the worktree as setup left it: the tree a fresh index makes of it, and
 * the paths it changes.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { stateDir } from '../../../src/store/run-files.js';
import { firstLook, forgetWorktreeTree, knownSnapshot, knownWorktreeTree, rememberWorktreeTree } from '../../../src/activities/snapshot.js';
import type { PrepareResult } from '../../../src/shared/contracts.js';
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

describe('the first look, taken after setup and ready for the first command', () => {
  it('is the worktree as setup left it', async () => {
    const repo = repoWith({ 'a.txt': 'x\n', 'src/b.ts': 'export const b = 1;\n' });
    // what setup leaves in the worktree before the first turn counts as it is
    const input = testInput({ repo, model: 'fake', setup: ['echo changed by setup > a.txt', 'echo new > new.md'] });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => saysDone });
    const env = new MockActivityEnvironment();
    const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
    expect(prep.ok).toBe(true);
    const state = stateDir(repo, input.runId);
    await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 });
    const seen = await knownSnapshot(state);
    expect(readFileSync(join(prep.worktree, 'a.txt'), 'utf8')).toBe('changed by setup\n');
    expect(seen?.tree).toBe(treeThroughFreshIndex(prep.worktree, prep.baseCommit));
    expect(seen?.changed).toEqual(['a.txt', 'new.md']);
  });

  it("a bigger repo: the look the first turn finds is the worktree's, whether prepare waited for it or not", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 3000; i++) files[`src/m${i}.js`] = `export const m${i} = ${i};\n`;
    const repo = repoWith(files);
    const input = testInput({ repo, model: 'fake', setup: ['echo changed > src/m7.js'] });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => saysDone });
    const env = new MockActivityEnvironment();
    const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
    await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 });
    const seen = await knownSnapshot(stateDir(repo, input.runId));
    expect(seen?.tree).toBe(treeThroughFreshIndex(prep.worktree, prep.baseCommit));
    expect(seen?.changed).toEqual(['src/m7.js']);
  });

  it('control: a turn that takes a checkpoint (the worktree changed since the look) leaves the look to the command', async () => {
    const repo = repoWith({ 'a.txt': 'x\n' });
    const input = testInput({ repo, model: 'fake' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => saysDone });
    const env = new MockActivityEnvironment();
    const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
    const state = stateDir(repo, input.runId);
    // prepare waits for the look only briefly (a loaded machine takes longer): the turn would wait
    await firstLook(prep.worktree, prep.baseCommit, state);
    expect((await knownSnapshot(state))?.tree).toBe(treeThroughFreshIndex(prep.worktree, prep.baseCommit));
    // as an edit does: the worktree is about to change outside a command
    await forgetWorktreeTree(state);
    writeFileSync(join(prep.worktree, 'a.txt'), 'edited\n');
    await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1, checkpoint: true });
    expect(await knownSnapshot(state)).toBeUndefined();
  });

  it("attack on the order: a first look that ends after a command's look (another worker process) does not replace it", async () => {
    const state = mkdtempSync(join(tmpdir(), 'kiln-seen-'));
    const [older, newer] = ['a'.repeat(40), 'b'.repeat(40)];
    // the command's look, remembered while the first look was still hashing
    await rememberWorktreeTree(state, newer, ['x.txt']);
    await rememberWorktreeTree(state, older, [], { unlessSeen: true });
    expect(await knownWorktreeTree(state)).toBe(newer);
    // the paths now name the older tree: no look is taken for known, the next command looks itself
    expect(await knownSnapshot(state)).toBeUndefined();
    // control: with nothing remembered, the first look is the one kept
    const fresh = mkdtempSync(join(tmpdir(), 'kiln-seen-'));
    await rememberWorktreeTree(fresh, older, ['y.txt'], { unlessSeen: true });
    expect(await knownSnapshot(fresh)).toEqual({ tree: older, changed: ['y.txt'] });
  });
});
