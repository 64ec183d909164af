/**
 * The run workflow on the real dev server with an in-process worker, real activities, the real
 * sandbox and git, and the scripted model server (a test double for the model only).
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveSignal, approveUpdate, statusQuery } from '../../src/shared/messages.js';
import type { RunInput, RunResult, RunState } from '../../src/shared/types.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { EXAMPLE_SCRIPT, exampleRepo, git, repoWith, testKilnHome, writeScript } from '../helpers/repo.js';
import { trustRepo } from '../../src/policy/trust.js';
import { testInput } from '../helpers/run-input.js';
import { outcome } from '../../src/client/runs.js';

let t: WorkflowTestEnv;
const start = (input: RunInput) => t.start(input);
const waitFor = (h: RunHandle, pred: (s: RunState) => boolean, ms?: number) => t.waitFor(h, pred, ms);

beforeAll(async () => {
  // this file's worker plays an operator who allowed --sandbox off (tests/workflow/trust.test.ts: one who did not)
  t = await workflowTestEnv('kiln-workflow-tests', { operator: { allowSandboxOff: true } });
});

afterAll(async () => {
  await t?.stop();
});

/** The validator's message, as the sender of a rejected Update reads it. */
async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    return (err as WorkflowUpdateFailedError).cause?.message ?? '';
  }
  throw new Error('the update was accepted');
}

describe('the run workflow', () => {
  it('fixes the example end to end: one approval, succeeded, artifacts written, the patch applies to the base', async () => {
    const repo = exampleRepo();
    const input = testInput({ repo, model: `scripted:${EXAMPLE_SCRIPT}` });
    const handle = await start(input);
    const st = await waitFor(handle, (s) => s.pendingApprovals.length > 0);
    const pending = st.pendingApprovals[0]!;
    expect(st.phase).toBe('awaiting_approval');
    expect(pending.summary).toContain('npm run lint');
    expect(pending.id).toBe('ap-1');

    expect(await rejection(handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-9', approve: true }] }))).toMatch(
      /unknown approval ap-9 \(pending: ap-1\)/,
    );
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'alice', note: 'lint is fine' }] });
    expect(await rejection(handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true }] }))).toMatch(/already decided/);

    const r: RunResult = await outcome(handle);
    expect(r.state).toBe('succeeded');
    expect(r.scripted).toBe(true);
    expect(r.turns).toBe(7);

    const dir = r.artifactsDir;
    for (const f of ['patch.diff', 'tests.log', 'events.jsonl', 'metrics.json', 'audit.jsonl']) expect(existsSync(join(dir, f)), f).toBe(true);
    const patch = readFileSync(r.patchPath, 'utf8');
    expect(patch).toContain('.filter((s) => !s.revokedAt)');
    const audit = readFileSync(join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit).toEqual([expect.objectContaining({ kind: 'approval', id: 'ap-1', decision: 'approved', by: 'alice', note: 'lint is fine' })]);
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8'));
    expect(metrics).toMatchObject({ state: 'succeeded', turns: 7, scripted: true });
    expect(readFileSync(join(dir, 'tests.log'), 'utf8')).toContain('# fail 0');

    // the worktree is gone and the user's checkout untouched
    expect(existsSync(join(repo, '.kiln', 'worktrees', input.runId))).toBe(false);
    expect(git(repo, 'status', '--porcelain')).toBe('');

    // the patch applies cleanly to the base and makes the tests pass
    git(repo, 'apply', '--check', r.patchPath);
    git(repo, 'apply', r.patchPath);
    execFileSync('node', ['--test', 'test/'], { cwd: repo, stdio: 'pipe' });
  });

  it('a rejection goes back to the model as the tool result, with its reason', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const dir = join(repo, '..');
    const script = writeScript(dir, 'reject', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'npm install left-pad', reason: 'need it' } }] },
        { expect: { tool_result_contains: 'not today' }, tool_use: [{ name: 'finish', input: { summary: 'gave up' } }] },
      ],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, humanTimeoutMs: 1000 }));
    await waitFor(handle, (s) => s.pendingApprovals.length > 0);
    // a signal of the same name works too (the Web UI's way)
    await handle.signal(approveSignal, { approvalId: 'ap-1', approve: false, reason: 'not today', by: 'bob' });
    const r = await outcome(handle);
    // the script's expectation proves the model saw the reason; nothing changed, so verification fails
    expect(r.turns).toBeGreaterThanOrEqual(2);
    const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('"decision":"rejected"');
    expect(audit).toContain('"by":"bob"');
  });

  it('an approval wait that times out ends in needs_human, never in a silent approve', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const script = writeScript(join(repo, '..'), 'timeout', {
      steps: [{ tool_use: [{ name: 'run_command', input: { command: 'npm install left-pad', reason: 'need it' } }] }],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, approvalTimeoutMs: 1500, humanTimeoutMs: 60_000 }));
    const st = await waitFor(handle, (s) => s.phase === 'needs_human');
    expect(st.reason).toMatch(/ap-1 timed out/);
    // a stale approval changes nothing
    expect(await rejection(handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true }] }))).toMatch(/timed out/);
    await handle.cancel();
  });

  it('malformed model output (unknown tool, invalid input) becomes an error result, not a failing workflow task', async () => {
    const repo = repoWith({ 'a.txt': 'hello\n' });
    const script = writeScript(join(repo, '..'), 'malformed', {
      steps: [
        {
          tool_use: [
            { name: 'delete_everything', input: {} },
            { name: 'read_file', input: { path: 42 } },
          ],
        },
        { expect: { tool_result_contains: 'delete_everything' }, tool_use: [{ name: 'read_file', input: { path: 'a.txt' } }] },
        { expect: { tool_result_contains: 'hello' }, tool_use: [{ name: 'finish', input: { summary: 'nothing to do' } }] },
      ],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, humanTimeoutMs: 1000 }));
    const r = await outcome(handle);
    expect(r.turns).toBeGreaterThanOrEqual(3);
    const events = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8');
    expect(events).toContain('invalid');
    // the workflow never failed a task: the history has no WorkflowTaskFailed event
    const history = await handle.fetchHistory();
    const failedTasks = history.events?.filter((e) => e.workflowTaskFailedEventAttributes) ?? [];
    expect(failedTasks).toHaveLength(0);
  });

  it('cancel mid-run: cancelled, worktree removed, artifacts still written', async () => {
    const repo = exampleRepo();
    const input = testInput({ repo, model: `scripted:${EXAMPLE_SCRIPT}` });
    const handle = await start(input);
    const st = await waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(existsSync(st.worktree!)).toBe(true);
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    const desc = await handle.describe();
    expect(desc.status.name).toBe('CANCELLED');
    expect(existsSync(st.worktree!)).toBe(false);
    const dir = st.artifactsDir;
    for (const f of ['patch.diff', 'events.jsonl', 'metrics.json', 'state.json']) expect(existsSync(join(dir, f)), f).toBe(true);
    // the edit made before the cancel is in the patch
    expect(readFileSync(join(dir, 'patch.diff'), 'utf8')).toContain('.filter((s) => !s.revokedAt)');
    expect(JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')).state).toBe('cancelled');
  });

  it('a failed setup ends the run blocked with its output, before any model turn is paid for', async () => {
    const repo = repoWith({ 'a.txt': 'x\n' });
    const input = testInput({ repo, model: `scripted:${EXAMPLE_SCRIPT}`, setup: ['echo "cannot resolve dependency left-pad" >&2; exit 3'] });
    const r = await outcome(await start(input));
    expect(r.state).toBe('blocked');
    expect(r.turns).toBe(0);
    expect(r.reason).toContain('setup command failed');
    expect(r.reason).toContain('cannot resolve dependency left-pad');
    expect(readFileSync(join(r.artifactsDir, 'setup.log'), 'utf8')).toContain('[exit 3]');
  });

  it('setup runs in the worktree and .kiln/config includes ignored files from the checkout', async () => {
    const repo = repoWith({ '.gitignore': 'local.env.json\nvendor/\n', 'a.txt': 'x\n' });
    writeFileSync(join(repo, 'local.env.json'), '{"port": 1}\n');
    mkdirSync(join(repo, 'vendor'));
    writeFileSync(join(repo, 'vendor', 'lib.js'), 'module.exports = 1;\n');
    mkdirSync(join(repo, '.kiln'));
    writeFileSync(
      join(repo, '.kiln', 'config'),
      JSON.stringify({ include: ['local.env.json'], link: ['vendor'], setup: ['echo prepared > setup-marker.txt'] }),
    );
    // a repo's own setup runs only once the user trusted its configuration
    trustRepo(repo, testKilnHome());
    const script = writeScript(join(repo, '..'), 'look', {
      steps: [
        { tool_use: [{ name: 'read_file', input: { path: 'setup-marker.txt' } }] },
        // a linked path serves commands (dependencies); the file tools stay inside the worktree
        { expect: { tool_result_contains: 'prepared' }, tool_use: [{ name: 'read_file', input: { path: 'vendor/lib.js' } }] },
        {
          expect: { tool_result_contains: 'symlink' },
          tool_use: [{ name: 'run_command', input: { command: 'node -e "console.log(require(\'./vendor/lib.js\') + 41)"', reason: 'use the dependency' } }],
        },
        { expect: { tool_result_contains: '42' }, tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'x', new_string: 'y' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'ok' } }] },
      ],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, allowUnverified: true }));
    const st = await waitFor(handle, (s) => s.turn >= 1);
    expect(readFileSync(join(st.worktree!, 'local.env.json'), 'utf8')).toContain('"port"');
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    // the user's checkout is untouched: .kiln/ is excluded, nothing else changed
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8')).toContain('.kiln/');
  });

  it('an approval for the rest of the run covers the same kind of call; a different kind still asks', async () => {
    const repo = repoWith({ 'a.txt': 'x\n' });
    const script = writeScript(join(repo, '..'), 'grant', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'mytool lint src', reason: 'the team linter' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'mytool format src', reason: 'the team formatter' } }] },
        { tool_use: [{ name: 'run_command', input: { command: 'make release', reason: 'a different kind' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, humanTimeoutMs: 1000 }));
    const first = await waitFor(handle, (s) => s.pendingApprovals.length > 0);
    const key = first.pendingApprovals[0]!.grantKey;
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true, scope: 'run', by: 'alice' }] });
    const second = await waitFor(handle, (s) => s.pendingApprovals.length > 0 || s.turn >= 4);
    // turn 2 ran without asking; the next approval is for turn 3's different kind of call
    expect(second.grants).toEqual([key]);
    expect(second.pendingApprovals.map((a) => a.summary)).toEqual([expect.stringContaining('make release')]);
    expect(second.pendingApprovals[0]!.id).toBe('ap-2');
    await handle.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-2', approve: false, reason: 'no releases', by: 'alice' }] });
    await outcome(handle);
  });

  it('--sandbox off is loud: in the live log and in the audit', async () => {
    const repo = repoWith({ 'a.txt': 'x\n' });
    const script = writeScript(join(repo, '..'), 'unsandboxed', {
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'echo hi > out.txt', reason: 'write' } }] },
        { expect: { tool_result_contains: 'sandbox OFF' }, tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const handle = await start(testInput({ repo, model: `scripted:${script}`, sandbox: 'off', allowUnverified: true }));
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    const st = await handle.query(statusQuery);
    expect(st.log.map((l) => l.text).join('\n')).toContain('SANDBOX OFF');
    const audit = readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('"kind":"sandbox"');
    expect(audit).toContain('--sandbox off');
  });
});
