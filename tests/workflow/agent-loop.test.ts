/**
 * The agent loop on the real dev server: every tool, model errors from the scripted server,
 * budgets, the stop gate, prompt-cache accounting, stuck detection, compaction and
 * continue-as-new. The scripted server is the model's test double; everything else is real.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusQuery } from '../../src/shared/messages.js';
import { GREET_FILES, repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { outcome } from '../../src/client/runs.js';
import { ledger } from '../helpers/ledger.js';
import { defaultDeps } from '../../src/activities/index.js';

let t: WorkflowTestEnv;
/** a second worker on t's server whose turn activity takes one turn each (KILN_TURNS_AHEAD_MS=0) */
let oneTurn: WorkflowTestEnv;
/** a third worker whose scripted model speaks Chat Completions through the OpenAI provider (KILN_SCRIPTED_WIRE=openai) */
let chatWire: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-loop-tests', { env: { ...process.env, KILN_TURNS_AHEAD_MS: '1000' } });
  oneTurn = await workflowTestEnv('kiln-loop-tests-one-turn', { env: { ...process.env, KILN_TURNS_AHEAD_MS: '0' } }, { server: t.env });
  const chatEnv = { ...process.env, KILN_TURNS_AHEAD_MS: '1000', KILN_SCRIPTED_WIRE: 'openai' };
  // the worker's own model clients, made from this environment as a worker started with it makes them
  chatWire = await workflowTestEnv('kiln-loop-tests-openai', { env: chatEnv, model: defaultDeps(chatEnv).model }, { server: t.env });
});
afterAll(async () => {
  await chatWire?.stop();
  await oneTurn?.stop();
  await t?.stop();
});

const CHECK = 'node --test';
const FILES = GREET_FILES;
const repo = () => repoWith(FILES);
const script = (name: string, steps: unknown[]) => writeScript(join(repo(), '..'), name, { name, steps });
const runCheck = { name: 'run_command', input: { command: CHECK, reason: 'the checks' } };
const fix = { name: 'edit', input: { path: 'src/greet.js', old_string: "'Hello ' + name", new_string: "'Hello, ' + name" } };
const finish = { name: 'finish', input: { summary: 'greet adds a comma' } };

function events(dir: string): Array<Record<string, unknown>> {
  return readFileSync(join(dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}
function metrics(dir: string): Record<string, any> {
  return JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8'));
}

describe('the agent loop', () => {
  // the same scripted run over both wire formats: the Messages API, and Chat Completions through the OpenAI provider
  it.each([
    ['the Messages API', () => t],
    ['Chat Completions', () => chatWire],
  ])('exercises every tool; a bad edit match comes back as an error with what to fix (scripted model, %s)', async (wire, worker) => {
    const s = script('every-tool', [
      {
        tool_use: [
          {
            name: 'update_plan',
            input: {
              steps: [
                { step: 'find greet', status: 'in_progress' },
                { step: 'fix it', status: 'pending' },
              ],
            },
          },
          { name: 'list_files', input: { glob: 'src/**' } },
        ],
      },
      { expect: { tool_result_contains: 'src/greet.js' }, tool_use: [{ name: 'search', input: { pattern: 'Hello', path_glob: 'src/**' } }] },
      { expect: { tool_result_contains: 'greet.js' }, tool_use: [{ name: 'read_file', input: { path: 'src/greet.js', start_line: 2, end_line: 3 } }] },
      {
        expect: { tool_result_contains: "return 'Hello ' + name" },
        tool_use: [{ name: 'edit', input: { path: 'src/greet.js', old_string: "'Hi ' + name", new_string: "'Hello, ' + name" } }],
      },
      {
        expect: { tool_result_contains: 'was not found in src/greet.js' },
        tool_use: [fix, { name: 'create_file', input: { path: 'src/greet.js', content: 'x' } }],
      },
      { expect: { tool_result_contains: 'already exists' }, tool_use: [{ name: 'create_file', input: { path: 'docs/greet.md', content: '# greet\n' } }] },
      { tool_use: [runCheck] },
      {
        expect: { tool_result_contains: '# pass 1' },
        tool_use: [
          {
            name: 'update_plan',
            input: {
              steps: [
                { step: 'find greet', status: 'done' },
                { step: 'fix it', status: 'done' },
              ],
            },
          },
          finish,
        ],
      },
    ]);
    const h = await worker().start(testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK] }));
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    const patch = readFileSync(r.patchPath, 'utf8');
    expect(patch).toContain("+  return 'Hello, ' + name;");
    expect(patch).toContain('+# greet');
    const st = await h.query(statusQuery);
    expect(st.plan.every((p) => p.status === 'done')).toBe(true);
    expect(st.touchedFiles.sort()).toEqual(['docs/greet.md', 'src/greet.js']);
    // which wire answered shows in the ledger: Chat Completions reports cached tokens, never cache writes
    const billed = ledger(r)
      .filter((l) => l.event === 'billed')
      .map((l) => l.usage as { cacheRead: number; cacheWrite: number });
    expect(billed).toHaveLength(r.turns);
    expect(billed.slice(1).every((u) => u.cacheRead > 0)).toBe(true);
    expect(billed.every((u) => (wire === 'Chat Completions' ? u.cacheWrite === 0 : u.cacheWrite > 0))).toBe(true);
  });

  it('the stop gate bounces a finish before the checks ran since the last edit', async () => {
    const s = script('gate', [
      { tool_use: [fix] },
      { tool_use: [finish] },
      { expect: { tool_result_contains: 'run the checks first' }, tool_use: [runCheck] },
      { tool_use: [finish] },
    ]);
    const r = await outcome(await t.start(testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK] })));
    expect(r.state).toBe('succeeded');
    expect(r.turns).toBe(4);
  });

  it.each([
    ['maxTurns', { maxTurns: 2 }, /maxTurns \(2\)/],
    ['maxTokens', { maxTokens: 500 }, /maxTokens \(500\)/],
    ['maxUsd', { maxUsd: 0.000001 }, /maxUsd/],
    ['maxWallMs', { maxWallMs: 1 }, /maxWallMs \(1\)/],
  ])('the %s budget ends the run and is named', async (_name, limit, reason) => {
    const s = script(
      'budget',
      Array.from({ length: 5 }, (_, i) => ({ tool_use: [{ name: 'read_file', input: { path: i % 2 ? 'src/greet.js' : 'test/greet.test.js' } }] })),
    );
    const input = testInput({ repo: repo(), model: `scripted:${s}` });
    input.budgets = { ...input.budgets, ...limit };
    const r = await outcome(await t.start(input));
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(reason);
  });

  it('the same call with the same result over and over ends the attempt as stuck', async () => {
    const s = script('stuck', [
      { tool_use: [{ name: 'read_file', input: { path: 'src/greet.js' } }], repeat: 3 },
      {
        expect: { user_contains: 'stuck' },
        tool_use: [
          {
            name: 'reflect',
            input: {
              attempt: 2,
              last_failure: 'stuck',
              last_cause: 'reading instead of fixing',
              this_fix: 'add the comma',
              rationale: 'the test wants a comma',
              changed_files: ['src/greet.js'],
            },
          },
          fix,
        ],
      },
      { tool_use: [runCheck] },
      { tool_use: [finish] },
    ]);
    const h = await t.start(testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK] }));
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(2);
    expect(events(r.artifactsDir).some((e) => e.type === 'verdict' && String(e.text).includes('stuck'))).toBe(true);
  });

  it('compacts older turns when the conversation nears the window, keeping plan, files and failures', async () => {
    const reads = Array.from({ length: 6 }, (_, i) => ({
      tool_use: [{ name: 'read_file', input: { path: i % 2 ? 'src/greet.js' : 'test/greet.test.js', start_line: 1 + (i % 3) } }],
    }));
    const s = script('compact', [
      { tool_use: [{ name: 'update_plan', input: { steps: [{ step: 'read everything', status: 'in_progress' }] } }] },
      ...reads,
      { tool_use: [fix] },
      { tool_use: [runCheck] },
      { tool_use: [finish] },
    ]);
    const r = await outcome(await t.start(testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK], contextTokens: 800 })));
    expect(r.state).toBe('succeeded');
    const compactions = events(r.artifactsDir).filter((e) => e.type === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    expect(Number(compactions[0]!.afterTokens)).toBeLessThan(Number(compactions[0]!.beforeTokens));
    const convo = JSON.parse(readFileSync(join(r.artifactsDir, 'state', 'conversation.json'), 'utf8'));
    const summary = JSON.stringify(convo.messages[0]);
    expect(summary).toContain('Summary of earlier turns');
    expect(summary).toContain('read everything');
    expect(summary).toContain('Goal:');
  });

  it('a 200-turn run continues as new without losing state', async () => {
    const s = script('long', [
      { tool_use: [{ name: 'read_file', input: { path: 'src/greet.js' } }] },
      { tool_use: [{ name: 'update_plan', input: { steps: [{ step: 'turn {{turn}}', status: 'in_progress' }] } }], repeat: 196 },
      { tool_use: [fix] },
      { tool_use: [runCheck] },
      { tool_use: [finish] },
    ]);
    const input = testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK], turnsPerRun: 60 });
    input.budgets = { ...input.budgets, maxTurns: 250 };
    const h = await t.start(input);
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    expect(r.turns).toBe(200);
    const st = await h.query(statusQuery);
    expect(st.touchedFiles).toEqual(['src/greet.js']);
    expect(st.budget.turns).toBe(200);
    // the chain: the first run ended in continue-as-new and the last run's history stays small
    const desc = await h.describe();
    expect(desc.runId).not.toBe(h.firstExecutionRunId);
    const history = await h.fetchHistory();
    expect(history.events!.length).toBeLessThan(2000);
  }, 300_000);

  it('secrets are redacted before the model, the logs, the artifacts and the workflow history see them', async () => {
    const aws = 'AKIAZ7QW3RT5YU8IOP2L';
    const gh = 'ghp_' + 'k3J9mQ2xV7bN4pL8sT1wY6zR0cF5hD2gA9eU';
    const r0 = repoWith({ ...FILES, 'src/config.js': `module.exports = { aws: '${aws}', token: '${gh}' };\n` });
    const s = writeScript(join(r0, '..'), 'secrets', {
      name: 'secrets',
      steps: [
        {
          tool_use: [
            { name: 'read_file', input: { path: 'src/config.js' } },
            { name: 'run_command', input: { command: 'cat src/config.js', reason: 'show it' } },
          ],
        },
        { expect: { tool_result_contains: '[REDACTED:' }, tool_use: [fix] },
        { tool_use: [runCheck] },
        { tool_use: [finish] },
      ],
    });
    const h = await t.start(testInput({ repo: r0, model: `scripted:${s}`, checks: [CHECK] }));
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    const history = JSON.stringify(await h.fetchHistory());
    const convo = readFileSync(join(r.artifactsDir, 'state', 'conversation.json'), 'utf8');
    const evts = readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8');
    const outputs = readdirSync(join(r.artifactsDir, 'outputs'))
      .map((f) => readFileSync(join(r.artifactsDir, 'outputs', f), 'utf8'))
      .join('\n');
    for (const [name, text] of Object.entries({ history, convo, evts, outputs })) {
      expect(text.includes(aws), `${name} holds the AWS key`).toBe(false);
      expect(text.includes(gh), `${name} holds the GitHub token`).toBe(false);
    }
    expect(convo).toContain('[REDACTED:');
  });
});

/** Model errors with the turn activity taking turns ahead (the default) and one turn each: the same either way. */
describe.each([
  { mode: 'turns ahead (KILN_TURNS_AHEAD_MS=1000, the default)', worker: () => t },
  { mode: 'one turn per activity (KILN_TURNS_AHEAD_MS=0)', worker: () => oneTurn },
])('model errors from the scripted server, $mode', ({ worker }) => {
  it('a 429 with retry-after is retried by Temporal and the run goes on; cache reads count from the second turn', async () => {
    const s = script('rate-limit', [{ tool_use: [fix] }, { error: { status: 429, retry_after_s: 1, times: 1 }, tool_use: [runCheck] }, { tool_use: [finish] }]);
    const r = await outcome(await worker().start(testInput({ repo: repo(), model: `scripted:${s}`, checks: [CHECK] })));
    expect(r.state).toBe('succeeded');
    const perTurn = metrics(r.artifactsDir).perTurn as Array<Record<string, number>>;
    expect(perTurn).toHaveLength(3);
    expect(perTurn[0]!.cacheRead).toBe(0);
    expect(perTurn[0]!.cacheWrite).toBeGreaterThan(0);
    for (const later of perTurn.slice(1)) expect(later.cacheRead).toBeGreaterThan(later.input);
    expect(r.tokens.cacheRead).toBeGreaterThan(0);
    // turn 2 is asked again when retry-after says, not at once: twice in all
    const turn2 = ledger(r).filter((l) => String(l.call).endsWith(':1:2'));
    const [failed, again] = [turn2.find((l) => l.event === 'failed'), turn2.filter((l) => l.event === 'start')[1]];
    expect(turn2.filter((l) => l.event === 'start')).toHaveLength(2);
    expect(Date.parse(String(again!.at)) - Date.parse(String(failed!.at))).toBeGreaterThanOrEqual(900);
  });

  it('a 401 is not retried: the run ends blocked with a clear reason', async () => {
    const s = script('unauthorized', [{ error: { status: 401, times: 'always' } }]);
    const r = await outcome(await worker().start(testInput({ repo: repo(), model: `scripted:${s}` })));
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/ModelFatalError/);
    expect(r.reason).toMatch(/401|auth/i);
  });
});
