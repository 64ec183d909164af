/**
 * A command the policy's parse shows to be a plain reader runs with the worktree read-only, and
 * no look (no git) follows it: the look before it is still the worktree. What makes that true is
 * the read-only mount, not the list of readers: a "reader" that writes (file -C writes a compiled
 * magic file beside its source) is refused by the kernel, and the kept look stays the worktree's.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import type { PrepareResult } from '../../../src/activities/contracts.js';
import { stateDir, writeJsonAtomic } from '../../../src/activities/run-files.js';
import { knownSnapshot } from '../../../src/activities/snapshot.js';
import { callPath } from '../../../src/activities/tools.js';
import { repoWith, treeThroughFreshIndex } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

/** every git command the activities ran on the host, through the hardened git they use */
const ran = vi.hoisted(() => [] as string[][]);
vi.mock('../../../src/git/run.js', async (importOriginal) => (await import('../../helpers/counting-git.js')).countingGit(importOriginal, ran));

async function prepared() {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
  const env = new MockActivityEnvironment();
  const prep = (await env.run(acts.prepareWorkspace, input)) as PrepareResult;
  const state = stateDir(repo, input.runId);
  const call = async (id: string, name: string, callInput: unknown) => {
    await writeJsonAtomic(callPath(repo, input.runId, id), { id, name, input: callInput });
    return env.run(acts.runTool, { runId: input.runId, repo, toolUseId: id, grants: [] });
  };
  /** the kept look, and what a fresh index makes of the worktree */
  const looks = async () => ({ kept: (await knownSnapshot(state))?.tree, truth: treeThroughFreshIndex(prep.worktree, prep.baseCommit) });
  return { prep, call, looks };
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

  it('attack: a "reader" that writes (file -C) is refused by the read-only worktree, and the kept look is still the truth', async () => {
    const { prep, call, looks } = await prepared();
    const made = await call('toolu_m', 'create_file', { path: 'magic', content: '0\tstring\talpha\tALPHA text\n' });
    expect(made).toMatchObject({ status: 'done', ok: true });
    const res = await call('toolu_f', 'run_command', { command: 'file -C -m magic', reason: 'compile' });
    expect(res).toMatchObject({ status: 'done', ok: false });
    expect(res.status === 'done' && res.summary).toMatch(/Read-only file system/);
    expect(existsSync(join(prep.worktree, 'magic.mgc'))).toBe(false);
    const after = await looks();
    expect(after.kept).toBe(after.truth);

    // control: the same compile, through a shell (not a plain reader), runs as a writer and writes
    const control = await call('toolu_c', 'run_command', { command: "sh -c 'file -C -m magic'", reason: 'compile' });
    expect(control).toMatchObject({ status: 'done', ok: true, changedPaths: ['magic.mgc'] });
    const last = await looks();
    expect(last.kept).toBe(last.truth);
  });
});
