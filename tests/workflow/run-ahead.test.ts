/**
 * A turn runs its calls in the activity that asked the model (activities/run-ahead.ts): one
 * hand-off through the server a turn instead of one per call. The guarantees that must survive
 * it: the policy still decides every call, nothing after a call that needs a person runs before
 * the person answers, and one command at most rides along (the turn's timeouts allow one).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { follow, outcome } from '../../src/client/runs.js';
import { approveSignal } from '../../src/shared/messages.js';
import { GREET_FILES, repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-run-ahead-tests');
});
afterAll(async () => {
  await t?.stop();
});

const CHECK = 'node --test';
const FILES = GREET_FILES;
const fix = { name: 'edit', input: { path: 'src/greet.js', old_string: "'Hello ' + name", new_string: "'Hello, ' + name" } };
const finish = { name: 'finish', input: { summary: 'greet adds a comma' } };

async function activities(handle: RunHandle): Promise<string[]> {
  const h = await handle.fetchHistory();
  return (h.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}

describe('a turn that runs its own calls', () => {
  it('reads, edits and runs a check in the model turn itself; a second command in the reply goes on its own', async () => {
    const repo = repoWith(FILES);
    const model = `scripted:${writeScript(join(repo, '..'), 'ahead', {
      name: 'ahead',
      steps: [
        {
          tool_use: [
            { name: 'read_file', input: { path: 'src/greet.js' } },
            fix,
            { name: 'run_command', input: { command: CHECK, reason: 'the check' } },
            { name: 'run_command', input: { command: 'echo second', reason: 'a second command' } },
          ],
        },
        { expect: { tool_result_contains: 'second' }, tool_use: [finish] },
      ],
    })}`;
    const handle = await t.start(testInput({ repo, model, checks: [CHECK] }));
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(r.patchPath, 'utf8')).toContain("+  return 'Hello, ' + name;");
    const acts = await activities(handle);
    expect(acts.filter((a) => a === 'agentTurn')).toHaveLength(2);
    // the read, the edit and the first command rode along; the second command had its own activity
    expect(acts.filter((a) => a === 'runTool')).toHaveLength(1);
    const log = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8');
    expect(log).toMatch(/"type":"tool".*node --test/);
  });

  it('attack: a call after one that needs a person does not run before the person answers', async () => {
    const repo = repoWith(FILES);
    const model = `scripted:${writeScript(join(repo, '..'), 'ask-then-write', {
      name: 'ask-then-write',
      steps: [
        {
          tool_use: [
            { name: 'create_file', input: { path: 'before.txt', content: 'before the ask\n' } },
            { name: 'run_command', input: { command: 'npm run lint', reason: 'lint' } },
            { name: 'create_file', input: { path: 'after.txt', content: 'after the ask\n' } },
          ],
        },
        { expect: { tool_result_contains: 'not today' }, tool_use: [{ name: 'run_command', input: { command: 'true', reason: 'the check' } }] },
        { tool_use: [finish] },
      ],
    })}`;
    const input = testInput({ repo, model, checks: ['true'] });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.pendingApprovals[0]!.summary).toContain('npm run lint');
    const wt = join(repo, '.kiln', 'worktrees', input.runId);
    // control: the call before the ask ran in the turn; the one after it waits for the answer
    expect(existsSync(join(wt, 'before.txt'))).toBe(true);
    expect(existsSync(join(wt, 'after.txt'))).toBe(false);
    await handle.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: false, reason: 'not today', by: 'bob' });
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    const patch = readFileSync(r.patchPath, 'utf8');
    expect(patch).toContain('+after the ask');
    expect(patch).toContain('+before the ask');
  });

  it('the live view shows a command running inside a turn before it ends, as it shows a lone one', async () => {
    const repo = repoWith(FILES);
    const model = `scripted:${writeScript(join(repo, '..'), 'slow-command', {
      name: 'slow-command',
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'sleep 4', reason: 'a slow step' } }] },
        { tool_use: [{ name: 'create_file', input: { path: 'notes.txt', content: 'slept\n' } }, finish] },
      ],
    })}`;
    const handle = await t.start(testInput({ repo, model, checks: [], allowUnverified: true }));
    const lines: Array<{ at: number; text: string }> = [];
    await follow(handle, { print: (text) => lines.push({ at: Date.now(), text }), pollMs: 200 });
    expect((await outcome(handle)).state).toBe('succeeded');
    const running = lines.find((l) => l.text.includes('run_command: sleep 4 … running'));
    const done = lines.find((l) => /run_command: sleep 4 → exit code 0/.test(l.text));
    expect(running, lines.map((l) => l.text).join('\n')).toBeDefined();
    expect(done, lines.map((l) => l.text).join('\n')).toBeDefined();
    expect(running!.at).toBeLessThan(done!.at - 1000);
    expect(lines.filter((l) => l.text.includes('… running'))).toHaveLength(1);
  });
});
