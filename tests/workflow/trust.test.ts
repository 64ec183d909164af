/**
 * Workflow input is a request: any local process that reaches the Temporal frontend (or the Web
 * UI's HTTP API) can start a `kilnRun`, so the worker bounds what it honours.
 * An attack: a run started with `sandbox: "off"` and its own setup command ran that command on the host.
 * Real dev server, real worker, real sandbox; the scripted model is never reached.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunInput } from '../../src/shared/types.js';
import { EXAMPLE_SCRIPT, repoWith } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { outcome } from '../../src/client/runs.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  // a worker as `kiln worker` starts by default: its operator allowed nothing extra
  t = await workflowTestEnv('kiln-trust-tests', { operator: { allowSandboxOff: false } });
});
afterAll(async () => {
  await t?.stop();
});

/** The attacker's setup: leave a mark outside the worktree, where only an unsandboxed host command can write. */
function hostMark(): { dir: string; mark: string; command: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-host-'));
  const mark = join(dir, 'pwned');
  return { dir, mark, command: `touch ${mark}` };
}

describe('a run request is bounded by the worker', () => {
  it('attack: sandbox "off" plus a setup command, from any client, ends blocked before anything runs', async () => {
    const { mark, command } = hostMark();
    const input = testInput({ repo: repoWith({ 'a.txt': 'x\n' }), model: `scripted:${EXAMPLE_SCRIPT}`, sandbox: 'off', setup: [command] });
    const r = await outcome(await t.start(input));
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/sandbox "off" is not allowed on this worker/);
    expect(r.reason).toMatch(/--allow-sandbox-off/);
    expect(r.turns).toBe(0);
    expect(existsSync(mark)).toBe(false);
  });

  it('attack: a request with a field the worker does not know is refused, not half-honoured', async () => {
    const input = { ...testInput({ repo: repoWith({ 'a.txt': 'x\n' }), model: `scripted:${EXAMPLE_SCRIPT}` }), hostNetwork: true } as RunInput;
    const h = await t.start(input);
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/run input refused by the workflow: unknown field hostNetwork/);
    // refused by the workflow itself: not one activity was scheduled for the request
    const events = (await h.fetchHistory()).events ?? [];
    expect(events.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
  });

  it('attack: a request whose run id is a path, or whose budgets are negative, names the field to fix', async () => {
    const good = testInput({ repo: repoWith({ 'a.txt': 'x\n' }), model: `scripted:${EXAMPLE_SCRIPT}` });
    const bad = await outcome(await t.start({ ...good, budgets: { ...good.budgets, maxUsd: -1 } }));
    expect(bad.state).toBe('blocked');
    expect(bad.reason).toMatch(/budgets\.maxUsd/);
    const path = await outcome(await t.start({ ...testInput({ repo: good.repo, model: good.model }), runId: '..' }));
    expect(path.reason).toMatch(/refused by the workflow: runId/);
  });

  it('attack: a client asks for 1e9 dollars, 1e9 turns and a 1e12 ms command timeout: refused, each field named, nothing run', async () => {
    const { mark, command } = hostMark();
    const good = testInput({ repo: repoWith({ 'a.txt': 'x\n' }), model: `scripted:${EXAMPLE_SCRIPT}`, setup: [command] });
    const h = await t.start({ ...good, budgets: { ...good.budgets, maxUsd: 1e9, maxTurns: 1e9 }, commandTimeoutMs: 1e12 });
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/run input refused by the worker: /);
    expect(r.reason).toMatch(/budgets\.maxTurns 1000000000 is above this worker's ceiling/);
    expect(r.reason).toMatch(/budgets\.maxUsd 1000000000 is above/);
    expect(r.reason).toMatch(/commandTimeoutMs 1000000000000 is above/);
    expect(r.turns).toBe(0);
    expect(existsSync(mark)).toBe(false);
  });

  it("attack: a client names a file of the worker's host as its scripted model: the run says it is not a script, never what it holds", async () => {
    const { dir } = hostMark();
    const secret = join(dir, 'shadow');
    writeFileSync(secret, 'root:$6$SECRETHASHc0ffee:19000:0:99999:7:::\n');
    const r = await outcome(await t.start(testInput({ repo: repoWith({ 'a.txt': 'x\n' }), model: `scripted:${secret}` })));
    expect(r.state).not.toBe('succeeded');
    expect(r.reason).toMatch(/not valid JSON/);
    expect(JSON.stringify(r)).not.toMatch(/root|SECRETHASH|c0ffee/);
  });

  it('control: the same setup with the sandbox on runs, inside the sandbox, and the run goes on', async () => {
    const { mark } = hostMark();
    const input = testInput({
      repo: repoWith({ 'a.txt': 'x\n' }),
      model: `scripted:${EXAMPLE_SCRIPT}`,
      setup: ['echo prepared > setup-marker.txt'],
      budgets: { maxTurns: 1, maxTokens: 5_000_000, maxUsd: 100, maxWallMs: 60_000 },
    });
    const h = await t.start(input);
    const st = await t.waitFor(h, (s) => s.turn >= 1 || s.phase === 'blocked');
    expect(st.reason ?? '').not.toMatch(/refused/);
    expect(existsSync(join(st.worktree!, 'setup-marker.txt'))).toBe(true);
    expect(existsSync(mark)).toBe(false);
    await h.terminate('test over');
  });
});
