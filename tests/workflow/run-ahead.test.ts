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
import type { RunState } from '../../src/shared/types.js';
import { workflowTestEnv, type RunHandle, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  // turns go on in one activity however slow this machine is: the tests below count activities
  t = await workflowTestEnv('kiln-run-ahead-tests', { env: { ...process.env, KILN_TURNS_AHEAD_MS: '60000' } });
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

/** The run's own record: the turns the model was asked for (events.jsonl). */
function turnEvents(artifactsDir: string): number[] {
  return readFileSync(join(artifactsDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; turn?: number })
    .flatMap((e) => (e.type === 'turn' && typeof e.turn === 'number' ? [e.turn] : []));
}

/** A scripted model of these steps, in the repo's parent directory. */
const scripted = (repo: string, name: string, steps: unknown[]) => `scripted:${writeScript(join(repo, '..'), name, { name, steps })}`;

const echo = (n: number) => ({ tool_use: [{ name: 'run_command', input: { command: `echo turn ${n}`, reason: 'a step' } }] });

describe('turns an activity goes on to take', () => {
  it('takes the next turns itself while nothing needs the workflow, and the workflow sees each turn', async () => {
    const repo = repoWith(FILES);
    const model = scripted(repo, 'turns-ahead', [
      {
        tool_use: [
          { name: 'create_file', input: { path: 'notes.txt', content: 'made in turn 1\n' } },
          { name: 'run_command', input: { command: 'echo one', reason: 'the check' } },
        ],
      },
      { expect: { tool_result_contains: 'one' }, tool_use: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
      { expect: { tool_result_contains: 'made in turn 1' }, ...echo(3) },
      { expect: { tool_result_contains: 'turn 3' }, tool_use: [finish] },
    ]);
    const handle = await t.start(testInput({ repo, model, checks: ['echo one'] }));
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    expect(r.turns).toBe(4);
    // one activity for the four turns: each later one started without a hand-off
    const acts = await activities(handle);
    expect(acts.filter((a) => a === 'agentTurn')).toHaveLength(1);
    expect(acts.filter((a) => a === 'runTool' || a === 'runTools')).toHaveLength(0);
    expect(turnEvents(r.artifactsDir)).toEqual([1, 2, 3, 4]);
    // the workflow's record is the one separate activities would give: a line per turn and call, the budget
    const st = JSON.parse(readFileSync(join(r.artifactsDir, 'state.json'), 'utf8')) as RunState;
    expect(st.budget.turns).toBe(4);
    expect(st.log.filter((l) => l.kind === 'turn').map((l) => l.text.split(':')[0])).toEqual(['turn 1', 'turn 2', 'turn 3', 'turn 4']);
    expect(st.log.filter((l) => l.kind === 'tool').map((l) => l.text)).toEqual(
      expect.arrayContaining([expect.stringContaining('read_file'), expect.stringMatching(/echo turn 3 → exit code 0/)]),
    );
    expect(st.touchedFiles).toContain('notes.txt');
  });

  it('attack: a model that keeps calling cannot pass the turn budget inside one activity', async () => {
    const repo = repoWith(FILES);
    const model = scripted(repo, 'over-budget', [1, 2, 3, 4, 5, 6].map(echo));
    const input = testInput({ repo, model, checks: [], allowUnverified: true, maxAttempts: 1, humanTimeoutMs: 1000 });
    const handle = await t.start({ ...input, budgets: { ...input.budgets, maxTurns: 3 } });
    const r = await outcome(handle);
    expect(r.turns).toBe(3);
    expect(turnEvents(r.artifactsDir)).toEqual([1, 2, 3]);
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).toContain('maxTurns (3)');
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).not.toContain('echo turn 4');
  });

  it('attack: a model repeating one call is stopped at the turn the workflow stops it, not later', async () => {
    const repo = repoWith(FILES);
    const same = { tool_use: [{ name: 'run_command', input: { command: 'echo same', reason: 'again' } }] };
    const model = scripted(repo, 'repeats', [same, same, same, same, same, same]);
    const handle = await t.start(testInput({ repo, model, checks: [], allowUnverified: true, maxAttempts: 1, humanTimeoutMs: 1000 }));
    const r = await outcome(handle);
    expect(r.state).not.toBe('succeeded');
    // the third identical call is the stuck one (STUCK_LIMITS.sameCall): no fourth turn was asked for
    expect(turnEvents(r.artifactsDir)).toEqual([1, 2, 3]);
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).toMatch(/the same call with the same result 3 times/);
  });

  it('attack: a turn whose call needs a person ends the activity; the next turn waits for the answer', async () => {
    const repo = repoWith(FILES);
    const model = scripted(repo, 'ask-in-turn-2', [
      echo(1),
      { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'lint' } }] },
      { expect: { tool_result_contains: 'not today' }, tool_use: [{ name: 'create_file', input: { path: 'after.txt', content: 'after the ask\n' } }] },
      { tool_use: [finish] },
    ]);
    const input = testInput({ repo, model, checks: [], allowUnverified: true });
    const handle = await t.start(input);
    const st = await t.waitFor(handle, (s) => s.pendingApprovals.length > 0);
    expect(st.pendingApprovals[0]!.summary).toContain('npm run lint');
    expect(st.turn).toBe(2);
    expect(existsSync(join(repo, '.kiln', 'worktrees', input.runId, 'after.txt'))).toBe(false);
    await handle.signal(approveSignal, { approvalId: st.pendingApprovals[0]!.id, approve: false, reason: 'not today', by: 'bob' });
    const r = await outcome(handle);
    expect(r.state).toBe('succeeded');
    expect(readFileSync(r.patchPath, 'utf8')).toContain('+after the ask');
  });
});
