/**
 * runTool as an activity, outside any server (MockActivityEnvironment): the tool journal that
 * makes effects happen once, and a sandbox that is unavailable refusing commands.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps, type ActivityDeps } from '../../../src/activities/index.js';
import { callPath } from '../../../src/activities/tool-results.js';
import { firstLook, knownSnapshot, knownWorktreeTree } from '../../../src/activities/snapshot.js';
import { checkpointDiff, diffAgainstBase } from '../../../src/store/diff.js';
import { stateDir, writeJsonAtomic } from '../../../src/store/run-files.js';
import { SandboxUnavailableError } from '../../../src/sandbox/index.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

async function prepared(deps: Partial<ActivityDeps> = {}) {
  const repo = repoWith({ 'a.txt': 'alpha\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', ...deps });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input);
  // the first turn waits for the run's first look before any call runs; these calls come first
  if (prep.ok) await firstLook(prep.worktree, prep.baseCommit, stateDir(repo, input.runId));
  const call = async (id: string, name: string, callInput: unknown) => {
    await writeJsonAtomic(callPath(repo, input.runId, id), { id, name, input: callInput });
    return env.run(acts.runTool, { runId: input.runId, repo, toolUseId: id, grants: [] });
  };
  return { repo, input, prep, acts, env, call };
}

describe('runTool', () => {
  it('an edit whose new text contains the old text is applied once, even when the activity runs again', async () => {
    const { prep, call } = await prepared();
    const input = { path: 'a.txt', old_string: 'alpha', new_string: 'alpha beta' };
    const first = await call('toolu_1', 'edit', input);
    expect(first).toMatchObject({ status: 'done', ok: true, effect: 'edit', path: 'a.txt' });
    const again = await call('toolu_1', 'edit', input);
    expect(again).toEqual(first);
    expect(readFileSync(join(prep.worktree, 'a.txt'), 'utf8')).toBe('alpha beta\n');
  });

  it('a crash between "started" and the result is recovered without applying the edit twice', async () => {
    const { prep, repo, input, call } = await prepared();
    // what a worker leaves when it dies right after writing the file: the journal says started,
    // the file has the new text, and no result was recorded
    const edit = { path: 'a.txt', old_string: 'alpha', new_string: 'alpha beta' };
    const { prepareEdit } = await import('../../../src/tools/index.js');
    const p = prepareEdit(prep.worktree, 'edit', { ...edit, replace_all: false });
    if (!p.ok) throw new Error(p.error);
    await writeJsonAtomic(join(repo, '.kiln', 'runs', input.runId, 'state', 'journal', 'toolu_2.started.json'), { at: 'x', name: 'edit', prepared: p });
    writeFileSync(join(prep.worktree, 'a.txt'), p.after);
    const res = await call('toolu_2', 'edit', edit);
    expect(res).toMatchObject({ status: 'done', ok: true, recovered: true });
    expect(readFileSync(join(prep.worktree, 'a.txt'), 'utf8')).toBe('alpha beta\n');
  });

  it('an unknown tool is denied (fail closed) and the model is told which tools exist', async () => {
    const { call } = await prepared();
    const res = await call('toolu_3', 'rm_rf', { path: '/' });
    expect(res.status).toBe('denied');
  });

  it('without a working sandbox, run_command is refused and nothing runs', async () => {
    const { prep, call } = await prepared({
      sandbox: async () => {
        throw new SandboxUnavailableError('bubblewrap (bwrap) is not installed: apt-get install bubblewrap');
      },
    });
    const res = await call('toolu_4', 'run_command', { command: 'touch ran.txt', reason: 'probe' });
    expect(res).toMatchObject({ status: 'done', ok: false });
    expect(res.status === 'done' && res.summary).toMatch(/refused.*bubblewrap/);
    expect(existsSync(join(prep.worktree, 'ran.txt'))).toBe(false);
  });

  it('running a script the run itself wrote asks, and the approval shows the script', async () => {
    const { prep, call } = await prepared();
    const made = await call('toolu_6', 'create_file', { path: 'run.sh', content: 'echo made-by-the-run > out.txt\n' });
    expect(made).toMatchObject({ status: 'done', ok: true });
    const res = await call('toolu_7', 'run_command', { command: 'bash run.sh', reason: 'try it' });
    expect(res.status).toBe('ask');
    expect(JSON.stringify(res)).toContain('echo made-by-the-run');
    expect(existsSync(join(prep.worktree, 'out.txt'))).toBe(false);
    // the look-alike: a file the run did not write is read by the policy as any other path
    const read = await call('toolu_8', 'run_command', { command: 'cat a.txt', reason: 'look' });
    expect(read.status).not.toBe('ask');
  });

  it("attack: a script a command wrote is the run's own for the next command too, though that look is kept, not taken again", async () => {
    const { prep, call, repo, input } = await prepared();
    const state = join(repo, '.kiln', 'runs', input.runId, 'state');
    const wrote = await call('toolu_1', 'run_command', { command: "printf 'echo pwned > out.txt\\n' > run.sh", reason: 'write a script' });
    expect(wrote).toMatchObject({ status: 'done', changedPaths: ['run.sh'] });
    // the next command's "before" comes from this kept look: it must name the script
    expect(await knownSnapshot(state)).toEqual({ tree: await knownWorktreeTree(state), changed: ['run.sh'] });
    const res = await call('toolu_2', 'run_command', { command: 'bash run.sh', reason: 'try it' });
    expect(res.status).toBe('ask');
    expect(existsSync(join(prep.worktree, 'out.txt'))).toBe(false);
    // control: a file that is the base's own runs without asking, through the same kept look
    const control = await call('toolu_3', 'run_command', { command: 'cat a.txt', reason: 'look' });
    expect(control).toMatchObject({ status: 'done', ok: true });
  });

  it('a command that needs approval is not run until approved with the matching hash', async () => {
    const { prep, call, env, acts, repo, input } = await prepared();
    const ask = await call('toolu_5', 'run_command', { command: 'npm install left-pad && touch installed.txt', reason: 'need it' });
    expect(ask.status).toBe('ask');
    expect(existsSync(join(prep.worktree, 'installed.txt'))).toBe(false);
    const wrong = await env.run(acts.runTool, { runId: input.runId, repo, toolUseId: 'toolu_5', grants: [], approvedHash: 'not-the-hash' });
    expect(wrong.status).toBe('ask');
  });

  it('a command that edits files (sed -i) returns the changed paths; ignored files and a read-only command return none', async () => {
    const { call } = await prepared();
    // through the edit tool, as a run changes its worktree outside a command
    expect(await call('toolu_g', 'create_file', { path: '.gitignore', content: 'build/\n' })).toMatchObject({ status: 'done', ok: true });
    const sed = await call('toolu_6', 'run_command', { command: "sed -i 's/alpha/omega/' a.txt", reason: 'edit by command' });
    expect(sed).toMatchObject({ status: 'done', ok: true, changedPaths: ['a.txt'] });
    expect(sed.status === 'done' && sed.summary).toMatch(/changed 1 file\(s\): a\.txt/);
    // the same file changed again (already modified against the base) still counts
    const again = await call('toolu_7', 'run_command', { command: "sed -i 's/omega/delta/' a.txt", reason: 'edit again' });
    expect(again).toMatchObject({ changedPaths: ['a.txt'] });
    const ignored = await call('toolu_8', 'run_command', { command: 'mkdir -p build && echo x > build/out.txt', reason: 'build output' });
    expect(ignored.status === 'done' && ignored.changedPaths).toBeUndefined();
    const look = await call('toolu_9', 'run_command', { command: 'cat a.txt', reason: 'look' });
    expect(look.status === 'done' && look.changedPaths).toBeUndefined();
  });

  it('the checkpoint after a command that changed nothing reuses the last one; after a change or an edit it is the fresh diff', async () => {
    const { prep, call, repo, input } = await prepared();
    const state = join(repo, '.kiln', 'runs', input.runId, 'state');
    const checkpoint = async () => checkpointDiff(prep.worktree, prep.baseCommit, state, await knownWorktreeTree(state));
    const fresh = () => diffAgainstBase(prep.worktree, prep.baseCommit, join(state, 'fresh'));

    await call('toolu_1', 'run_command', { command: 'echo one > one.txt', reason: 'change' });
    const first = await checkpoint();
    expect(first.patch).toContain('+one');
    expect(first.patch).toBe(await fresh());
    await call('toolu_2', 'run_command', { command: 'echo nothing', reason: 'look' });
    expect(await checkpoint()).toEqual({ patch: first.patch, reused: true });

    // a command that changes a file: the tree it left is diffed, equal to the one-shot diff
    await call('toolu_3', 'run_command', { command: 'echo two >> one.txt', reason: 'change' });
    const second = await checkpoint();
    expect(second.reused).toBe(false);
    expect(second.patch).toContain('+two');
    expect(second.patch).toBe(await fresh());

    // an edit changes the worktree outside a command: the tree seen last is no longer trusted
    await call('toolu_4', 'edit', { path: 'a.txt', old_string: 'alpha', new_string: 'gamma' });
    expect(await knownWorktreeTree(state)).toBeUndefined();
    const third = await checkpoint();
    expect(third.patch).toContain('+gamma');
    expect(third.patch).toBe(await fresh());
  });
});
