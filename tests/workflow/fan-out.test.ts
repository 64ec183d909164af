/**
 * Parallel attempts (--attempts N): child runs of one goal at once on the real dev server and the
 * real example repo; each child's model is its own script (a test double for the model only).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownCgroups } from '../helpers/cgroups.js';
import { statusQuery } from '../../src/shared/messages.js';
import type { RunState } from '../../src/shared/types.js';
import { exampleRepo, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-fan-out-tests');
});
afterAll(async () => {
  await t?.stop();
});

const LOOKUP = '  const sessions = store.findByUser(userId);\n  const session = sessions[0];';
const GENERAL =
  '  const sessions = store.findByUser(userId).filter((s) => !s.revokedAt).sort((a, b) => b.createdAt - a.createdAt);\n  const session = sessions[0];';
const edit = { name: 'edit', input: { path: 'src/session.js', old_string: LOOKUP, new_string: GENERAL } };
const test = { name: 'run_command', input: { command: 'npm test', reason: 'the checks' } };
const finish = { name: 'finish', input: { summary: 'done' } };
/** the example's lint is not a check: the policy asks a person, so this child waits */
const lint = { name: 'run_command', input: { command: 'npm run lint', reason: 'lint first' } };

function script(name: string, steps: unknown[]): string {
  return `scripted:${writeScript(join(exampleRepo('kiln-script-'), '..'), name, { name, steps })}`;
}

const child = (id: string) => t.env.client.workflow.getHandle(id);

/** the processes whose command line holds `marker` (pgrep itself excluded) */
function pgrep(marker: string): string {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

const childState = (id: string) => child(id).query(statusQuery) as Promise<RunState>;

describe('parallel attempts', () => {
  it('the first child that succeeds wins; a waiting one is cancelled with its worktree gone, a blocked one stays blocked', async () => {
    const waits = script('fan-waits', [{ tool_use: [lint] }, { tool_use: [finish] }]);
    const fixes = script('fan-fixes', [{ tool_use: [edit] }, { tool_use: [test] }, { tool_use: [finish] }]);
    const fails = script('fan-fails', [{ error: { status: 400, message: 'bad request', times: 'always' } }]);
    const input = testInput({ repo: exampleRepo(), model: fixes, attempts: 3, attemptModels: [waits, fixes, fails] });
    const h = await t.start(input);
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    const parent = await h.query(statusQuery);
    expect(parent.winner).toBe(`${input.runId}-a2`);
    expect(parent.children!.map((c) => c.phase)).toEqual(['cancelled', 'succeeded', 'blocked']);
    expect(r.patchPath).toContain(`${input.runId}-a2`);

    expect((await child(`${input.runId}-a1`).describe()).status.name).toBe('CANCELLED');
    expect((await child(`${input.runId}-a3`).describe()).status.name).toBe('FAILED');
    // no child is left running; the winner's and the cancelled one's worktrees are gone (a blocked
    // run keeps its own for a look, as every blocked run does, until `kiln clean`)
    for (const i of [1, 2, 3]) {
      const st = await childState(`${input.runId}-a${i}`);
      expect(['succeeded', 'blocked', 'cancelled']).toContain(st.phase);
      if (st.phase !== 'blocked') expect(existsSync(st.worktree!), `${st.runId}'s worktree ${st.worktree}`).toBe(false);
    }
    expect((await childState(`${input.runId}-a1`)).reason).toMatch(/cancelled/);
    // the parent's totals are every child's spend, the cancelled loser's included
    const spends = await Promise.all([1, 2, 3].map(async (i) => (await childState(`${input.runId}-a${i}`)).budget));
    expect(spends[0]!.input).toBeGreaterThan(0);
    expect(parent.budget.input).toBe(spends.reduce((n, b) => n + b.input, 0));
    expect(parent.budget.output).toBe(spends.reduce((n, b) => n + b.output, 0));
  });

  it('a loser cancelled in the middle of a command: its processes, cgroup and worktree are gone when the parent ends', async () => {
    const marker = `kiln-fan-loser-${process.pid}-${Date.now()}`;
    const long = { name: 'run_command', input: { command: `sleep 120 # ${marker}`, reason: 'a long job' } };
    const slow = { name: 'run_command', input: { command: 'sleep 3', reason: 'a slow look first' } };
    const sleeps = script('fan-sleeps', [{ tool_use: [long] }, { tool_use: [finish] }]);
    const fixes = script('fan-fixes-slowly', [{ tool_use: [slow] }, { tool_use: [edit] }, { tool_use: [test] }, { tool_use: [finish] }]);
    const input = testInput({ repo: exampleRepo(), model: fixes, attempts: 2, attemptModels: [sleeps, fixes] });
    const h = await t.start(input);
    const deadline = Date.now() + 60_000;
    while (!pgrep(marker)) {
      if (Date.now() > deadline) throw new Error("the loser's command never started");
      await new Promise((r) => setTimeout(r, 100));
    }
    // as root the sandbox gives each command cgroups of its own: what the check below must see gone
    if (process.getuid?.() === 0) expect(ownCgroups().length, "the loser's command runs in its own cgroups").toBeGreaterThan(0);
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect((await h.query(statusQuery)).winner).toBe(`${input.runId}-a2`);
    const loser = await childState(`${input.runId}-a1`);
    expect(loser.phase).toBe('cancelled');
    expect(pgrep(marker), "a process of the cancelled loser's command").toBe('');
    expect(ownCgroups(), "cgroups of the children's commands and sandboxes").toEqual([]);
    expect(existsSync(loser.worktree!), "the loser's worktree").toBe(false);
  });

  it('cancelling the parent cancels every child; each ends cancelled with its worktree gone', async () => {
    const waits = script('fan-both-wait', [{ tool_use: [lint] }, { tool_use: [finish] }]);
    const input = testInput({ repo: exampleRepo(), model: waits, attempts: 2 });
    const h = await t.start(input);
    await t.waitFor(h, (s) => s.phase === 'planning');
    for (const i of [1, 2]) await t.waitFor(child(`${input.runId}-a${i}`) as typeof h, (s) => s.phase === 'awaiting_approval');
    await h.cancel();
    await expect(h.result()).rejects.toThrow();
    expect((await h.describe()).status.name).toBe('CANCELLED');
    for (const i of [1, 2]) {
      const id = `${input.runId}-a${i}`;
      expect((await child(id).describe()).status.name).toBe('CANCELLED');
      const st = await childState(id);
      expect(st.phase).toBe('cancelled');
      expect(existsSync(st.worktree!)).toBe(false);
    }
  });

  it('no child succeeds: the parent is blocked and says why each ended', async () => {
    const fails = script('fan-all-fail', [{ error: { status: 400, message: 'bad request', times: 'always' } }]);
    const input = testInput({ repo: exampleRepo(), model: fails, attempts: 2 });
    const h = await t.start(input);
    await expect(h.result()).rejects.toMatchObject({ cause: { type: 'KilnRunNotAchieved' } });
    const st = await h.query(statusQuery);
    expect(st.phase).toBe('blocked');
    expect(st.reason).toMatch(new RegExp(`${input.runId}-a1: blocked.*${input.runId}-a2: blocked`));
  });
});
