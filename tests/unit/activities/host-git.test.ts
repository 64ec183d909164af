/**
 * Git that Kiln runs on the host must not run the repository's code: a hook, an fsmonitor, an
 * external diff or a pager named in the repo's config stays inert while Kiln makes the worktree
 * and the patch. Each trap would write a marker file if it ran.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import { initialState } from '../../../src/workflows/machine.js';
import { git, repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

describe('host git is hardened', () => {
  it('no hook, fsmonitor, external diff or pager of the repo runs during prepare and finalize', async () => {
    const traps = mkdtempSync(join(tmpdir(), 'kiln-traps-'));
    const repo = repoWith({ 'a.txt': 'one\n' });
    const trap = (name: string) => {
      const script = join(traps, `${name}.sh`);
      writeFileSync(script, `#!/bin/sh\ntouch ${join(traps, `${name}.ran`)}\n`);
      chmodSync(script, 0o755);
      return script;
    };
    writeFileSync(join(repo, '.git', 'hooks', 'post-checkout'), `#!/bin/sh\ntouch ${join(traps, 'hook.ran')}\n`);
    chmodSync(join(repo, '.git', 'hooks', 'post-checkout'), 0o755);
    git(repo, 'config', 'core.fsmonitor', trap('fsmonitor'));
    git(repo, 'config', 'diff.external', trap('extdiff'));
    git(repo, 'config', 'core.pager', trap('pager'));

    // the control: plain git in this repo does run the hook
    git(repo, 'checkout', '-q', '-b', 'control');
    expect(existsSync(join(traps, 'hook.ran'))).toBe(true);
    for (const f of ['hook.ran', 'fsmonitor.ran']) if (existsSync(join(traps, f))) (await import('node:fs')).rmSync(join(traps, f));

    const input = testInput({ repo, model: 'scripted:/dev/null' });
    const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host' });
    const env = new MockActivityEnvironment();
    const prep = await env.run(acts.prepareWorkspace, input);
    writeFileSync(join(prep.worktree, 'a.txt'), 'two\n');
    const state = { ...initialState(input), phase: 'succeeded' as const };
    const res = await env.run(acts.finalizeRun, { runId: input.runId, repo, state, removeWorktree: true });

    expect((await import('node:fs')).readFileSync(res.patchPath, 'utf8')).toContain('+two');
    for (const f of ['hook.ran', 'fsmonitor.ran', 'extdiff.ran', 'pager.ran']) expect(existsSync(join(traps, f)), f).toBe(false);
  });
});
