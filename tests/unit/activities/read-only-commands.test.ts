/**
 * A command the policy's parse shows to be a plain reader runs with the worktree read-only, and
 * no look (no git) follows it: the look before it is still the worktree. What makes that true is
 * the read-only mount, not the list of readers: a "reader" that writes (the list made wrong here on
 * purpose: `file -C` writes a compiled magic file) is refused by the kernel, and the kept look
 * stays the worktree's.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import type { PrepareResult } from '../../../src/shared/contracts.js';
import { stateDir, writeJsonAtomic } from '../../../src/store/run-files.js';
import { changedAtMost, firstLook, forgetWorktreeTree, knownSnapshot, lookAfterEdit, lookAfterEditDone } from '../../../src/activities/snapshot.js';
import { callPath } from '../../../src/activities/tool-results.js';
import { repoWith, treeThroughFreshIndex } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

/** every git command the activities ran on the host, through the hardened git they use */
const ran = vi.hoisted(() => [] as string[][]);
vi.mock('../../../src/git/run.js', async (importOriginal) => (await import('../../helpers/counting-git.js')).countingGit(importOriginal, ran));

/** commands the reader list is made to get wrong: it calls them readers */
const wronglyReaders = vi.hoisted(() => new Set<string>());
vi.mock('../../../src/policy/read-only.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/policy/read-only.js')>();
  return {
    ...real,
    writesNothing: (segments: Parameters<typeof real.writesNothing>[0]) =>
      segments.every((s) => wronglyReaders.has(s.argv.join(' '))) || real.writesNothing(segments),
  };
});

async function prepared() {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
  const state = stateDir(repo, input.runId);
  // the first turn waits for the run's first look before any call runs; these calls come first
  await firstLook(prep.worktree, prep.baseCommit, state);
  const call = async (id: string, name: string, callInput: unknown) => {
    await writeJsonAtomic(callPath(repo, input.runId, id), { id, name, input: callInput });
    return env.run(acts.runTool, { runId: input.runId, repo, toolUseId: id, grants: [] });
  };
  /** the kept look, and what a fresh index makes of the worktree */
  const looks = async () => ({ kept: (await knownSnapshot(state))?.tree, truth: treeThroughFreshIndex(prep.worktree, prep.baseCommit) });
  return { prep, call, looks, state };
}

describe('read-only commands', () => {
  it('a reader runs no git after it and leaves the kept look as it is; control: a writer is looked at', async () => {
    const { call, looks } = await prepared();
    const wrote = await call('toolu_w', 'run_command', { command: 'echo made > made.txt', reason: 'write' });
    expect(wrote).toMatchObject({ status: 'done', ok: true, changedPaths: ['made.txt'] });
    const afterWriter = await looks();
    expect(afterWriter.kept).toBe(afterWriter.truth);

    ran.length = 0;
    const read = await call('toolu_r', 'run_command', { command: 'cat a.txt made.txt | wc -l', reason: 'read' });
    expect(read).toMatchObject({ status: 'done', ok: true });
    expect(read.status === 'done' && read.summary).toContain('2');
    expect(read.status === 'done' && read.changedPaths).toBeUndefined();
    expect(ran).toEqual([]);
    expect(await looks()).toEqual(afterWriter);
  });

  it('attack: a "reader" that writes (file -C, with the list made wrong), right after an edit, is refused by the read-only worktree and judged with no git of its own', async () => {
    const { prep, call, looks, state } = await prepared();
    wronglyReaders.add('file -C -m magic');
    const made = await call('toolu_m', 'create_file', { path: 'magic', content: '0\tstring\talpha\tALPHA text\n' });
    expect(made).toMatchObject({ status: 'done', ok: true });
    // the edit forgot the look and kept the paths the run changed at most, with its own; its look
    // goes on beside what comes next
    expect(await changedAtMost(state)).toEqual(['magic']);
    await lookAfterEditDone(state);
    ran.length = 0;
    const res = await call('toolu_f', 'run_command', { command: 'file -C -m magic', reason: 'compile' });
    expect(res).toMatchObject({ status: 'done', ok: false });
    expect(res.status === 'done' && res.summary).toMatch(/Read-only file system/);
    expect(existsSync(join(prep.worktree, 'magic.mgc'))).toBe(false);
    expect(ran).toEqual([]);
    const after = await looks();
    expect(after.kept).toBe(after.truth);

    // control: the same compile, as the real list sees it (a writer), writes, is looked at, and the
    // kept look is the worktree's again
    wronglyReaders.clear();
    const control = await call('toolu_c', 'run_command', { command: 'file -C -m magic', reason: 'compile' });
    expect(control).toMatchObject({ status: 'done', ok: true, changedPaths: ['magic.mgc'] });
    const last = await looks();
    expect(last.kept).toBe(last.truth);
    expect(await changedAtMost(state)).toBeUndefined();
  });

  it('attack: with no look since an edit, running the file the run wrote still asks (the paths changed at most hold it); control: reading it does not', async () => {
    const { call, state } = await prepared();
    await call('toolu_s', 'create_file', { path: 'run.sh', content: 'echo hi\n' });
    // the look after the edit is not waited for: the paths changed at most judge both
    expect(await call('toolu_x', 'run_command', { command: 'bash run.sh', reason: 'run it' })).toMatchObject({ status: 'ask' });
    expect(await call('toolu_y', 'run_command', { command: 'cat run.sh', reason: 'read it' })).toMatchObject({ status: 'done', ok: true });
    await lookAfterEditDone(state);
  });

  it('attack: a look after an edit that ends after the worktree was said to change is not kept; control: one that ends first is', async () => {
    const { prep, looks, state } = await prepared();
    writeFileSync(join(prep.worktree, 'b.txt'), 'one\n');
    lookAfterEdit(prep.worktree, prep.baseCommit, state);
    // a command that may write forgets the look at once and changes the worktree while the look goes on
    await forgetWorktreeTree(state);
    writeFileSync(join(prep.worktree, 'b.txt'), 'two\n');
    await lookAfterEditDone(state);
    expect((await looks()).kept).toBeUndefined();

    lookAfterEdit(prep.worktree, prep.baseCommit, state);
    await lookAfterEditDone(state);
    const kept = await looks();
    expect(kept.kept).toBe(kept.truth);
    expect((await knownSnapshot(state))?.changed).toEqual(['b.txt']);
  });
});
