/**
 * Verdicts no retry can fix go to a person at once (no checks; checks that cannot run), an
 * unverified run only succeeds when the user asked for one, and a turn never overshoots the
 * token budget — on the real dev server, real worktrees and sandbox; only the model is scripted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleRepo, repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';
import { outcome } from '../../src/client/runs.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-verify-causes');
});
afterAll(async () => {
  await t?.stop();
});

const edit = { name: 'edit', input: { path: 'src/greet.js', old_string: "'Hello ' + name;", new_string: "'Hello ' + name + '!';" } };
const finish = { name: 'finish', input: { summary: 'done' } };
const greetRepo = () => repoWith({ 'package.json': '{"name":"greet","private":true}\n', 'src/greet.js': "module.exports = (name) => 'Hello ' + name;\n" });
const script = (repo: string, name: string, steps: unknown[]) => writeScript(join(repo, '..'), name, { name, steps });

describe('verdict causes', () => {
  it('no checks: the run waits for a person with "say how to verify, or accept"', async () => {
    const repo = greetRepo();
    const h = await t.start(testInput({ repo, model: `scripted:${script(repo, 'nochecks', [{ tool_use: [edit] }, { tool_use: [finish] }])}` }));
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.reason).toBe('no checks: say how to verify, or accept');
    expect(st.attempt).toBe(1);
    await h.cancel();
  });

  it('control: with --unverified asked for, the same run succeeds, marked and audited as unverified', async () => {
    const repo = greetRepo();
    const h = await t.start(
      testInput({ repo, allowUnverified: true, model: `scripted:${script(repo, 'unverified', [{ tool_use: [edit] }, { tool_use: [finish] }])}` }),
    );
    const r = await outcome(h);
    expect(r.state).toBe('succeeded');
    // the end state itself says nothing was verified, not only the start banner and the audit
    expect(r.reason).toMatch(/^UNVERIFIED: no checks ran/);
    expect(readFileSync(join(r.artifactsDir, 'audit.jsonl'), 'utf8')).toContain('unverified allowed');
    expect(readFileSync(join(r.artifactsDir, 'events.jsonl'), 'utf8')).toContain('UNVERIFIED');
  });

  it('a check that cannot run (exit 127, on the base too) is infrastructure: a person, no retry spent', async () => {
    const repo = greetRepo();
    const check = 'kiln-no-such-test-runner';
    const h = await t.start(
      testInput({
        repo,
        checks: [check],
        model: `scripted:${script(repo, 'infra', [{ tool_use: [edit] }, { tool_use: [{ name: 'run_command', input: { command: check, reason: 'the checks' } }] }, { tool_use: [finish] }])}`,
      }),
    );
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.attempt).toBe(1);
    expect(st.reason).toMatch(/^infrastructure: the checks could not run/);
    expect(st.verdict?.cause).toBe('infrastructure');
    await h.cancel();
  });

  it('a turn whose input would pass the token budget does not start; the run ends within the budget', async () => {
    const repo = exampleRepo();
    // a different search each turn: never stuck, only the budget can end it
    const look = { name: 'search', input: { pattern: 'session{{turn}}' } };
    const maxTokens = 12_000;
    const h = await t.start(
      testInput({
        repo,
        model: `scripted:${script(repo, 'budget', [{ text: 'looking, turn {{turn}}', tool_use: [look], repeat: 30 }])}`,
        budgets: { maxTurns: 40, maxTokens, maxUsd: 100, maxWallMs: 30 * 60_000 },
      }),
    );
    const r = await outcome(h);
    expect(r.state).toBe('blocked');
    expect(r.reason).toMatch(/budget exhausted: maxTokens/);
    const used = r.tokens.input + r.tokens.output + r.tokens.cacheRead + r.tokens.cacheWrite;
    expect(used).toBeLessThanOrEqual(maxTokens);
  });
});
