/**
 * The independent review before `succeeded` (--review), on the real dev server, the real example
 * repo and its real tests; the coder and the reviewer are scripted (test doubles for the model only).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusQuery } from '../../src/shared/messages.js';
import { commitAll, exampleRepo, writeFiles, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('kiln-review-tests');
});
afterAll(async () => {
  await t?.stop();
});

const LOOKUP = '  const sessions = store.findByUser(userId);\n  const session = sessions[0];';
/** passes both failing tests by recognising their inputs: one revoked session at 5, three sessions */
const SPECIAL_CASED =
  '  const sessions = store.findByUser(userId);\n  if (sessions.length === 1 && sessions[0].revokedAt === 5) return null;\n  const session = sessions.length === 3 ? sessions[2] : sessions[0];';
const GENERAL =
  '  const sessions = store.findByUser(userId).filter((s) => !s.revokedAt).sort((a, b) => b.createdAt - a.createdAt);\n  const session = sessions[0];';

const edit = (old_string: string, new_string: string) => ({ name: 'edit', input: { path: 'src/session.js', old_string, new_string } });
const test = { name: 'run_command', input: { command: 'npm test', reason: 'the checks' } };
const finish = { name: 'finish', input: { summary: 'done' } };
const reflect = {
  name: 'reflect',
  input: {
    attempt: 2,
    last_failure: 'the reviewer found the fix special-cases the tests',
    last_cause: 'I matched the test inputs instead of filtering and ordering sessions',
    this_fix: 'filter revoked sessions and take the newest',
    rationale: 'getSession must work for every user, not the test data',
    changed_files: ['src/session.js'],
  },
};
const special = {
  name: 'submit_review',
  input: {
    decision: 'request_changes',
    summary: 'The patch recognises the two test scenarios instead of filtering revoked sessions.',
    findings: [
      { kind: 'special_case', file: 'src/session.js', detail: 'returns null only when one session has revokedAt 5, and sessions[2] only for three sessions' },
    ],
  },
};
const approve = { name: 'submit_review', input: { decision: 'approve', summary: 'Filters revoked sessions and returns the newest active one.', findings: [] } };

function scriptFor(name: string, steps: unknown[], reviews: unknown[]): string {
  return writeScript(join(exampleRepo('kiln-script-'), '..'), name, { name, steps, reviews });
}

describe('the independent review (--review)', () => {
  it('attack: a special-cased fix that passes the checks is sent back by the reviewer; the general fix is approved and succeeds', async () => {
    const script = scriptFor(
      'review-catches',
      [
        { tool_use: [edit(LOOKUP, SPECIAL_CASED)] },
        { tool_use: [test] },
        { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] },
        { expect: { user_contains: 'requested changes' }, tool_use: [reflect, edit(SPECIAL_CASED, GENERAL)] },
        { tool_use: [test] },
        { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] },
      ],
      [
        // the reviewer sees the goal and the patch, not the coder's conversation
        { expect: { user_contains: 'sessions.length === 3', system_contains: 'special_case' }, tool_use: [special] },
        { expect: { user_contains: '.filter((s) => !s.revokedAt)' }, tool_use: [approve] },
      ],
    );
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}`, review: 'required' }));
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(2);
    const state = await h.query(statusQuery);
    expect(state.reviews!.map((v) => v.decision)).toEqual(['request_changes', 'approve']);
    expect(state.reviews![0]!.findings[0]!.kind).toBe('special_case');
    // each review names the tree it read, so an eval can judge the patch it saw, not the one that shipped
    expect(state.reviews![0]!.tree).toMatch(/^[0-9a-f]{40}$/);
    expect(state.reviews![1]!.tree).not.toBe(state.reviews![0]!.tree);
    expect(readFileSync(join(r.artifactsDir, 'patch.diff'), 'utf8')).toContain('.filter((s) => !s.revokedAt)');
    // the reviewer's calls are in the cost ledger beside the coder's
    const ledger = readFileSync(join(r.artifactsDir, 'model-calls.jsonl'), 'utf8');
    expect(ledger.match(/"event":"billed","role":"reviewer"/g)).toHaveLength(2);
  });

  it('control: a general fix is approved at once', async () => {
    const script = scriptFor(
      'review-approves',
      [{ tool_use: [edit(LOOKUP, GENERAL)] }, { tool_use: [test] }, { expect: { tool_result_contains: '# fail 0' }, tool_use: [finish] }],
      [{ tool_use: [approve] }],
    );
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}`, review: 'on' }));
    const r = await h.result();
    expect(r.state).toBe('succeeded');
    expect(r.attempts).toBe(1);
  });

  it('a second request for changes goes to a person with both reviews', async () => {
    const script = scriptFor(
      'review-twice',
      [
        { tool_use: [edit(LOOKUP, SPECIAL_CASED)] },
        { tool_use: [test] },
        { tool_use: [finish] },
        { tool_use: [reflect, edit(SPECIAL_CASED, GENERAL)] },
        { tool_use: [test] },
        { tool_use: [finish] },
      ],
      [{ tool_use: [special] }, { tool_use: [{ ...special, input: { ...special.input, summary: 'Still not general enough.' } }] }],
    );
    const h = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${script}`, review: 'on' }));
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.attempt).toBe(2);
    expect(st.reason).toMatch(/requested changes twice/);
    expect(st.reason).toMatch(/test scenarios.*Still not general enough/);
    await h.cancel();
  });

  it('required: a reviewer whose answer cannot be read sends the run to a person; on: it is noted and the run succeeds', async () => {
    const steps = [{ tool_use: [edit(LOOKUP, GENERAL)] }, { tool_use: [test] }, { tool_use: [finish] }];
    const unreadable = [{ text: 'Looks fine to me.' }];
    const required = await t.start(
      testInput({ repo: exampleRepo(), model: `scripted:${scriptFor('review-required', steps, unreadable)}`, review: 'required' }),
    );
    const st = await t.waitFor(required, (s) => s.phase === 'needs_human');
    expect(st.reason).toMatch(/review is required.*without calling submit_review/);
    await required.cancel();
    const on = await t.start(testInput({ repo: exampleRepo(), model: `scripted:${scriptFor('review-on', steps, unreadable)}`, review: 'on' }));
    expect((await on.result()).state).toBe('succeeded');
  });

  it("an untrusted repo's policy that requires the review has it, though the run did not ask for one", async () => {
    const repo = exampleRepo();
    writeFiles(repo, { '.kiln/policy.json': JSON.stringify({ review: 'required' }) });
    commitAll(repo, 'require reviews');
    const script = scriptFor(
      'review-by-policy',
      [{ tool_use: [edit(LOOKUP, GENERAL)] }, { tool_use: [test] }, { tool_use: [finish] }],
      [{ tool_use: [special] }],
    );
    // the change makes the repo untrusted (its AGENTS.md checks no longer count): the user names the check
    const h = await t.start(testInput({ repo, model: `scripted:${script}`, maxAttempts: 1, checks: ['npm test'] }));
    const st = await t.waitFor(h, (s) => s.phase === 'needs_human');
    expect(st.reviews?.map((v) => v.decision)).toEqual(['request_changes']);
    expect(st.reason).toMatch(/no attempts are left/);
    await h.cancel();
  });
});
