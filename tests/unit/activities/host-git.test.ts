/**
 * Git that Kiln runs on the host must not run the repository's code. Every caller of the git
 * runner works in a repository whose config tries all the ways (tests/helpers/hostile-git.ts):
 * making the worktree, rebuilding it from a checkpoint, the checkpoint and the final patch, the
 * changed-file list, the diff in the model's context, list_files and the CLI's run options.
 * Each trap would leave a marker file if it ran.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { changedFiles, checkpointDiff, diffAgainstBase } from '../../../src/store/diff.js';
import { buildRunInput } from '../../../src/client/run-options.js';
import { currentDiff } from '../../../src/context/diff.js';
import { listFiles, listWorkspaceFiles } from '../../../src/tools/list-files.js';
import { initialState } from '../../../src/workflows/machine.js';
import { git } from '../../helpers/repo.js';
import { hostileRepo, plainGit } from '../../helpers/hostile-git.js';
import { testInput } from '../../helpers/run-input.js';

const head = (repo: string) => git(repo, 'rev-parse', 'HEAD').trim();

describe('host git is hardened in every caller', () => {
  it('control: in this repository plain git diff and add run its fsmonitor, filters, diff drivers and hooks', () => {
    const h = hostileRepo();
    plainGit(h.repo, ['diff', 'HEAD']);
    plainGit(h.repo, ['add', '-A']);
    expect(h.ran()).toEqual(expect.arrayContaining(['fsmonitor', 'clean', 'process', 'extdiff', 'diffcmd', 'hook-post-index-change']));
  });

  it('prepareWorkspace (worktree add) and finalizeRun (patch, worktree remove) run none of it', async () => {
    const h = hostileRepo();
    const input = testInput({ repo: h.repo, model: 'scripted:/dev/null' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
    const env = new MockActivityEnvironment();
    const prep = await env.run(acts.prepareWorkspace, input);
    writeFileSync(join(prep.worktree, 'a.txt'), 'two\n');
    const state = { ...initialState(input), phase: 'succeeded' as const };
    const res = await env.run(acts.finalizeRun, { runId: input.runId, repo: h.repo, state, removeWorktree: true });
    expect(readFileSync(res.patchPath, 'utf8')).toContain('+two');
    expect(h.ran()).toEqual([]);
  });

  it('a rebuild applies the checkpoint patch (git apply) and runs none of it', async () => {
    const h = hostileRepo();
    const input = testInput({ repo: h.repo, model: 'scripted:/dev/null' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
    const env = new MockActivityEnvironment();
    const patch = 'diff --git a/c.dat b/c.dat\n--- a/c.dat\n+++ b/c.dat\n@@ -1 +1 @@\n-one\n+restored\n';
    const prep = await env.run(acts.prepareWorkspace, input, { lostHost: 'gone', patch, turn: 3 });
    expect(prep.restored).toMatchObject({ applied: true, files: ['c.dat'] });
    expect(readFileSync(join(prep.worktree, 'c.dat'), 'utf8')).toBe('restored\n');
    expect(h.ran()).toEqual([]);
  });

  it('the checkpoint (read-tree, add, diff on a scratch index) and the changed-file list run none of it', async () => {
    const h = hostileRepo();
    const scratch = join(h.traps, 'scratch');
    const patch = await diffAgainstBase(h.repo, head(h.repo), scratch);
    expect(patch).toContain('--- a/a.txt\n+++ b/a.txt');
    expect(await changedFiles(h.repo, head(h.repo), scratch)).toEqual(['a.txt', 'b.md', 'c.dat']);
    // the per-turn checkpoint's kept index: read-tree, add, write-tree, diff
    expect((await checkpointDiff(h.repo, head(h.repo), scratch)).patch).toBe(patch);
    expect(h.ran()).toEqual([]);
  });

  it("the diff in the model's context (diff HEAD, untracked files) runs none of it", async () => {
    const h = hostileRepo();
    writeFileSync(join(h.repo, 'new.txt'), 'new\n');
    const diff = await currentDiff(h.repo);
    expect(diff).toContain('+changed');
    expect(diff).toContain('New untracked files: new.txt');
    expect(h.ran()).toEqual([]);
  });

  it('list_files (ls-files) runs none of it', async () => {
    const h = hostileRepo();
    expect(await listWorkspaceFiles(h.repo)).toEqual(['.gitattributes', 'a.txt', 'b.md', 'c.dat']);
    expect((await listFiles(h.repo, { glob: '*.md' })).content).toBe('b.md');
    expect(h.ran()).toEqual([]);
  });

  it("the CLI's run options (rev-parse of the repo and the base) run none of it", async () => {
    const h = hostileRepo();
    const script = join(h.traps, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'done' }] }));
    const input = await buildRunInput({ repo: h.repo, goal: 'x', model: `scripted:${script}` }, {});
    expect(input.repo).toBe(h.repo);
    expect(h.ran()).toEqual([]);
  });
});
