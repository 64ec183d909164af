/**
 * Verification, retries with reflection, and needs_human as a waiting state — on the real dev
 * server, the real example repo and its real tests; only the model is scripted.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveUpdate, humanUpdate } from '../../src/shared/messages.js';
import { defaultDeps } from '../../src/activities/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import type { RunState } from '../../src/shared/types.js';
import { EXAMPLE_SCRIPT, exampleRepo, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { writeFileSync } from 'node:fs';
import { commitAll } from '../helpers/repo.js';
import { outcome } from '../../src/client/runs.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-verify-tests');
});
afterAll(async () => {
  await t?.stop();
});

const LOOKUP = 'store.findByUser(userId)';
const FILTERED = 'store.findByUser(userId)\n    .filter((s) => !s.revokedAt)';
const SORTED = `${FILTERED}\n    .sort((a, b) => b.createdAt - a.createdAt)`;

const edit = (old_string: string, new_string: string) => ({ name: 'edit', input: { path: 'src/session.js', old_string, new_string } });
const test = { name: 'run_command', input: { command: 'npm test', reason: 'the checks' } };
const finish = { name: 'finish', input: { summary: 'done' } };
const reflect = (attempt: number, this_fix: string) => ({
  name: 'reflect',
  input: {
    attempt,
    last_failure: 'returns the newest active session failed',
    last_cause: 'the lookup does not order sessions',
    this_fix,
    rationale: 'the test expects the newest active session',
    changed_files: ['src/session.js'],
  },
});
/** a change that fixes nothing: both behaviour tests keep failing */
const noop = (n: number) => edit("'use strict';", `'use strict';\n// attempt ${n}`);

function scriptFor(name: string, steps: unknown[]): string {
  return writeScript(join(exampleRepo('kiln-script-'), '..'), name, { name, steps });
}

/** Approves what the example asks (its lint is not one of the checks) until the run ends or waits for a person. */
async function untilDecided(env: WorkflowTestEnv, h: RunHandle): Promise<RunState> {
  for (;;) {
    const st = await env.waitFor(h, (s) => ['awaiting_approval', 'needs_human', 'succeeded', 'blocked'].includes(s.phase), 240_000);
    if (st.phase !== 'awaiting_approval') return st;
    for (const a of st.pendingApprovals) await h.executeUpdate(approveUpdate, { args: [{ approvalId: a.id, approve: true, by: 'test' }] });
  }
}

function decisions(dir: string): Array<Record<string, unknown>> {
  return readFileSync(join(dir, 'decisions.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

describe('verification and retries', () => {
  it('passes on retry 1 after a valid reflection', async () => {
    const script = scriptFor('retry1', [
      { tool_use: [edit(LOOKUP, FILTERED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { expect: { user_contains: 'attempt 2 of 3' }, tool_use: [reflect(2, 'sort by createdAt, newest first'), edit(FILTERED, SORTED)] },
      { tool_use: [test] },
      { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}` }));
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(2);
    const log = decisions(r.artifactsDir);
    expect(log).toEqual([expect.objectContaining({ type: 'reflection', valid: true, attempt: 2, this_fix: 'sort by createdAt, newest first' })]);
  });

  it('passes on retry 2; a reflection that misses a field is sent back once and kept in the decision log', async () => {
    const bad = { name: 'reflect', input: { attempt: 2, last_failure: 'x', this_fix: 'y' } };
    const script = scriptFor('retry2', [
      { tool_use: [noop(1)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { tool_use: [bad] },
      { expect: { tool_result_contains: 'last_cause' }, tool_use: [reflect(2, 'filter revoked sessions'), edit(LOOKUP, FILTERED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { expect: { user_contains: 'attempt 3 of 3' }, tool_use: [reflect(3, 'sort by createdAt'), edit(FILTERED, SORTED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}` }));
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(3);
    const log = decisions(r.artifactsDir);
    expect(log.map((e) => e.valid)).toEqual([false, true, true]);
    expect(String(log[0]!.error)).toMatch(/last_cause/);
  });

  it('an edit in a retry before any reflection is refused once with "reflect first"', async () => {
    const script = scriptFor('reflect-first', [
      { tool_use: [edit(LOOKUP, FILTERED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { tool_use: [edit(FILTERED, SORTED)] },
      { expect: { tool_result_contains: 'Reflect first' }, tool_use: [reflect(2, 'sort'), edit(FILTERED, SORTED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
    ]);
    const r = await (await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}` }))).result();
    expect(r.state).toBe('succeeded');
  });

  it('the same failure twice in a row goes to needs_human at once; abandon ends it blocked', async () => {
    const script = scriptFor('same-failure', [
      { tool_use: [noop(1)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { tool_use: [reflect(2, 'another try'), noop(2)] },
      { tool_use: [test] },
      { tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}` }));
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.attempt).toBe(2);
    expect(st.reason).toMatch(/same failure twice/);
    expect(st.verdict?.checks[0]?.failingTests).toEqual(expect.arrayContaining(['should reject revoked session']));
    await h.executeUpdate(humanUpdate, { args: [{ action: 'abandon', by: 'carol' }] });
    // a blocked run fails the workflow (red in the Web UI) with a typed failure carrying its result
    await expect(h.result()).rejects.toMatchObject({ cause: { type: 'KilnRunNotAchieved', nonRetryable: true } });
    expect((await h.describe()).status.name).toBe('FAILED');
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toBe('abandoned by carol');
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toContain('"action":"abandon"');
  });

  it('exhausted attempts wait for a person; a hint rescues the run', async () => {
    const script = scriptFor('hint', [
      { tool_use: [noop(1)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { tool_use: [reflect(2, 'filter revoked'), edit(LOOKUP, FILTERED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
      { expect: { user_contains: 'newest first, please' }, tool_use: [edit(FILTERED, SORTED)] },
      { tool_use: [test] },
      { tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}`, maxAttempts: 2 }));
    const st: RunState = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.reason).toMatch(/no attempts left \(2\)/);
    await h.executeUpdate(humanUpdate, { args: [{ action: 'hint', text: 'sort by createdAt, newest first, please', by: 'dave' }] });
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(3);
  });

  it('a person can accept the patch as it is: succeeded, marked accepted by them', async () => {
    const script = scriptFor('accept', [{ tool_use: [edit(LOOKUP, FILTERED)] }, { tool_use: [test] }, { tool_use: [finish] }]);
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}`, maxAttempts: 1 }));
    await t.waitFor(h, (s) => s.phase === 'needs_human');
    await h.executeUpdate(humanUpdate, { args: [{ action: 'accept', by: 'erin' }] });
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.acceptedBy).toBe('erin');
    expect(readFileSync(r.patchPath, 'utf8')).toContain('.filter((s) => !s.revokedAt)');
  });

  it('a command cannot rewrite a protected test (the sandbox holds it read-only), and the verifier judges the base tests', async () => {
    const repo = exampleRepo();
    // a repo script that rewrites the tests: the coder reaches the test file through a command
    writeFileSync(
      join(repo, 'relax-tests.js'),
      "const fs = require('fs');\nfs.writeFileSync('test/session.test.js', \"require('node:test')('ok', () => {});\\n\");\n",
    );
    commitAll(repo, 'add a script');
    const script = scriptFor('edits-tests', [
      { tool_use: [{ name: 'run_command', input: { command: 'node relax-tests.js', reason: 'update the tests' } }] },
      { expect: { tool_result_contains: 'EROFS' }, tool_use: [test] },
      { tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo, model: `scripted:${script}`, maxAttempts: 1 }));
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.verdict?.pass).toBe(false);
    expect(st.verdict?.checks[0]?.failingTests).toEqual(expect.arrayContaining(['should reject revoked session']));
    expect(st.verdict?.protectedChanged).toEqual([]);
    await h.cancel();
  });

  it('the verifier refuses a change to a protected test file that reached the worktree anyway, even when the checks pass there', async () => {
    // the sandbox holds tests read-only; something on the host (an editor, a hook) is the way left
    const real = await defaultDeps().sandbox('bwrap');
    const repo = exampleRepo('kiln-protected-');
    const hostWrite: Sandbox = {
      kind: real.kind,
      probe: real.probe,
      async run(command, opts) {
        if (command === 'node relax-tests.js') writeFileSync(join(opts.workspace, 'test', 'session.test.js'), "require('node:test')('ok', () => {});\n");
        return real.run(command, opts);
      },
    };
    const script = scriptFor('edits-tests-host', [
      { tool_use: [{ name: 'run_command', input: { command: 'node relax-tests.js', reason: 'update the tests' } }] },
      { tool_use: [test] },
      { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] },
    ]);
    const env = await workflowTestEnv('kiln-protected-tests', { sandbox: async () => hostWrite });
    try {
      const h = await env.start(testInput({ repo, model: `scripted:${script}`, maxAttempts: 1 }));
      const st = await env.waitFor(h, (s) => s.phase === 'needs_human');
      expect(st.verdict?.pass).toBe(false);
      // the checks ran on the base's tests, put back in the verified tree: the real failures show
      expect(st.verdict?.checks[0]?.passed).toBe(false);
      expect(st.verdict?.checks[0]?.failingTests).toEqual(expect.arrayContaining(['should reject revoked session']));
      expect(st.verdict?.protectedChanged).toEqual(['test/session.test.js']);
      expect(st.verdict?.tree).toMatch(/^[0-9a-f]{40}$/);
      await h.cancel();
    } finally {
      await env.stop();
    }
  }, 300_000);

  it('attack: a write to the worktree while the checks run is never shipped as succeeded; control: the verified tree ships', async () => {
    // Something on the host (an editor, a stray process) writes into the model's worktree while
    // the checks run in their own checkout: what is there at the end is not what was verified.
    const real = await defaultDeps().sandbox('bwrap');
    const meddling: Sandbox = {
      kind: real.kind,
      probe: real.probe,
      async run(command, opts) {
        const r = await real.run(command, opts);
        if (command === 'npm test' && !opts.workspace.includes('/.kiln/worktrees/')) {
          for (const wt of readdirSync(join(repo, '.kiln', 'worktrees')))
            appendFileSync(join(repo, '.kiln', 'worktrees', wt, 'src', 'session.js'), 'globalThis.leak = 1;\n');
        }
        return r;
      },
    };
    const repo = exampleRepo('kiln-stale-');
    const env = await workflowTestEnv('kiln-stale-tests', { sandbox: async () => meddling });
    try {
      const h = await env.start(testInput({ repo, model: `scripted:${EXAMPLE_SCRIPT}` }));
      const st = await untilDecided(env, h);
      expect(st.reason).toMatch(/the worktree changed after it was verified/);
      expect(st.phase).toBe('needs_human');
      expect(st.attempt).toBe(1);
      await h.executeUpdate(humanUpdate, { args: [{ action: 'abandon', by: 'test' }] });
      expect((await outcome(h)).state).toBe('blocked');
    } finally {
      await env.stop();
    }

    const control = await t.start(testInput({ repo: exampleRepo('kiln-bound-'), model: `scripted:${EXAMPLE_SCRIPT}` }));
    await untilDecided(t, control);
    const ok = await outcome(control);
    expect(ok.state).toBe('succeeded');
    const patch = readFileSync(ok.patchPath, 'utf8');
    expect(patch).toContain('revokedAt');
    expect(patch).not.toContain('leak');
  }, 300_000);
});
