/**
 * The review activity on a real worktree with a model double that records the request: what the
 * reviewer is shown (the goal, the patch, the tests; never the coder's conversation), and what a
 * reply it cannot read becomes.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import type { ModelClient, ModelRequest } from '../../../src/model/index.js';
import { runDir, stateDir } from '../../../src/store/run-files.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const NO_USAGE = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };

type CallOptions = Parameters<ModelClient['create']>[1];

/** `during` runs inside the model call, given the call's options and the run's ledger. */
async function reviewWith(
  reply: ModelClient['create'] extends (...a: never[]) => Promise<infer R> ? Partial<R> : never,
  during?: (opts: CallOptions, ledger: string) => Promise<void>,
) {
  const repo = repoWith({ 'src/sum.js': 'module.exports = (a, b) => a - b;\n', 'test/sum.test.js': 'assert.equal(sum(2, 2), 4); // KEEP-TEST-TEXT\n' });
  const input = testInput({ repo, model: 'scripted:/dev/null', goal: 'sum adds its arguments', review: 'required' });
  const seen: ModelRequest[] = [];
  const roles: Array<string | undefined> = [];
  const model: ModelClient = {
    scripted: true,
    model: 'double',
    async create(req, opts) {
      seen.push(req);
      roles.push(opts.role);
      await during?.(opts, join(runDir(repo, input.runId), 'model-calls.jsonl'));
      return { content: [], stopReason: 'tool_use', usage: NO_USAGE, model: 'double', costUsd: 0.001, ...reply };
    },
  };
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => model });
  const env = new MockActivityEnvironment();
  const prep = await env.run(acts.prepareWorkspace, input);
  writeFileSync(join(prep.worktree, 'src/sum.js'), 'module.exports = (a, b) => (a === 2 && b === 2 ? 4 : a - b);\n');
  // the coder's conversation is on disk beside the run; the reviewer must never be shown it
  writeFileSync(join(stateDir(repo, input.runId), 'conversation.json'), JSON.stringify({ messages: [{ role: 'user', content: 'CODER-TRANSCRIPT-MARKER' }] }));
  const review = await env.run(acts.reviewPatch, { runId: input.runId, repo, attempt: 1, review: 1, verdict: 'all 1 check(s) passed' });
  const ledger = readFileSync(join(runDir(repo, input.runId), 'model-calls.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { review, seen, roles, ledger };
}

describe('reviewPatch', () => {
  it('shows the reviewer the goal, the patch and the tests in one fresh message, and only its verdict tool', async () => {
    const verdict = {
      decision: 'request_changes',
      summary: 'special-cases 2 + 2',
      findings: [{ kind: 'special_case', file: 'src/sum.js', detail: 'only 2 + 2 adds' }],
    };
    const { review, seen, roles } = await reviewWith({
      content: [{ type: 'tool_use', id: 't1', name: 'submit_review', input: verdict, caller: { type: 'direct' } }],
    });
    expect(review).toMatchObject({ decision: 'request_changes', findings: [{ kind: 'special_case', file: 'src/sum.js' }], costUsd: 0.001 });
    const req = seen[0]!;
    expect(roles).toEqual(['reviewer']);
    expect(req.tools.map((x) => x.name)).toEqual(['submit_review']);
    expect(req.forceTool).toBe('submit_review');
    expect(req.messages).toHaveLength(1);
    const text = JSON.stringify(req);
    expect(text).toContain('sum adds its arguments');
    expect(text).toContain('a === 2 && b === 2');
    expect(text).toContain('KEEP-TEST-TEXT');
    expect(text).not.toContain('CODER-TRANSCRIPT-MARKER');
  });

  it('a reply without a verdict, or with a malformed one, is an unavailable review that says why', async () => {
    const none = await reviewWith({ content: [{ type: 'text', text: 'LGTM', citations: null }] });
    expect(none.review).toMatchObject({ decision: 'unavailable', problem: expect.stringMatching(/without calling submit_review/) });
    const bad = await reviewWith({
      content: [{ type: 'tool_use', id: 't1', name: 'submit_review', input: { decision: 'maybe' }, caller: { type: 'direct' } }],
    });
    expect(bad.review).toMatchObject({ decision: 'unavailable', problem: expect.stringMatching(/malformed.*decision/) });
  });

  it('a reply billed while the disk is full is kept and written to the ledger once there is room: the review is not lost', async () => {
    const verdict = { decision: 'approve', summary: 'adds', findings: [] };
    const { review, seen, ledger } = await reviewWith(
      { content: [{ type: 'tool_use', id: 't1', name: 'submit_review', input: verdict, caller: { type: 'direct' } }] },
      async (opts, file) => {
        // the disk is full while the stream says what the reply cost (/dev/full answers every write with ENOSPC)
        renameSync(file, `${file}.kept`);
        symlinkSync('/dev/full', file);
        try {
          await opts.onBilled?.({ message: 'msg_review', usage: NO_USAGE, costUsd: 0.001 });
        } finally {
          unlinkSync(file);
          renameSync(`${file}.kept`, file);
        }
      },
    );
    expect(review).toMatchObject({ decision: 'approve', costUsd: 0.001 });
    expect(seen).toHaveLength(1);
    expect(ledger.map((l) => [l.event, l.role])).toEqual([
      ['start', 'reviewer'],
      ['answered', undefined],
      ['billed', 'reviewer'],
    ]);
    expect(ledger[2]).toMatchObject({ call: ledger[0]!.call, message: 'msg_review', usage: NO_USAGE, costUsd: 0.001 });
  });
});
