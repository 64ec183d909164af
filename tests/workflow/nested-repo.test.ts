/**
 * A git repository of its own inside the run's worktree (a vendored checkout, `git init` by the
 * model): the run judges the honest fix beside it like any other, leaves the nested repository out
 * of the patch and the verified tree — it never crashes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveUpdate } from '../../src/shared/messages.js';
import type { RunState } from '../../src/shared/types.js';
import { exampleRepo, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-nested-repo-tests');
});
afterAll(async () => {
  await t?.stop();
});

const LOOKUP = 'store.findByUser(userId)';
const FIXED = 'store.findByUser(userId)\n    .filter((s) => !s.revokedAt)\n    .sort((a, b) => b.createdAt - a.createdAt)';
const fix = { name: 'edit', input: { path: 'src/session.js', old_string: LOOKUP, new_string: FIXED } };
const run = (command: string) => ({ name: 'run_command', input: { command, reason: 'set up' } });
const test = run('npm test');
const finish = { name: 'finish', input: { summary: 'done' } };

function scriptFor(name: string, steps: unknown[]): string {
  return writeScript(join(exampleRepo('kiln-script-'), '..'), name, { name, steps });
}

async function untilDecided(h: RunHandle): Promise<RunState> {
  for (;;) {
    const st = await t.waitFor(h, (s) => ['awaiting_approval', 'needs_human', 'succeeded', 'blocked'].includes(s.phase), 240_000);
    if (st.phase !== 'awaiting_approval') return st;
    for (const a of st.pendingApprovals) await h.executeUpdate(approveUpdate, { args: [{ approvalId: a.id, approve: true, by: 'test' }] });
  }
}

/** `setupSays`: what the set-up command's result must hold (the next step fails the run if not) */
async function runWith(name: string, setup: unknown[], setupSays: string) {
  const script = scriptFor(name, [
    { tool_use: setup },
    { expect: { tool_result_contains: setupSays }, tool_use: [fix] },
    { tool_use: [test] },
    { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] },
  ]);
  const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}` }));
  const st = await untilDecided(h);
  const r = await h.result();
  const patch = readFileSync(join(r.artifactsDir, 'patch.diff'), 'utf8');
  return { st, r, patch };
}

describe('a nested git repository in the worktree', () => {
  it('with no commit (git init vendor/fmt) beside an honest fix: succeeded in one attempt, left out of the patch', async () => {
    const { r, patch } = await runWith(
      'nested-empty',
      [run('mkdir -p vendor/fmt && echo "int x;" > vendor/fmt/fmt.c && git init vendor/fmt && ls vendor/fmt/.git')],
      'HEAD',
    );
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(1);
    expect(patch).toContain('.filter((s) => !s.revokedAt)');
    expect(patch).not.toContain('vendor/fmt');
  }, 240_000);

  it('control: the same files without git init are the run’s change, in the patch', async () => {
    const { r, patch } = await runWith('nested-control', [run('mkdir -p vendor/fmt && echo "int x;" > vendor/fmt/fmt.c && ls vendor/fmt')], 'fmt.c');
    expect(r.state).toBe('succeeded');
    expect(patch).toContain('.filter((s) => !s.revokedAt)');
    expect(patch).toContain('+++ b/vendor/fmt/fmt.c');
  }, 240_000);
});
