import { describe, expect, it } from 'vitest';
import { afterVerdict, approvalProblem, initialState, log, MAX_LOG_LINES } from '../../../src/workflows/machine.js';
import { budgetExceeded } from '../../../src/loop/budget.js';
import type { Verdict } from '../../../src/shared/types.js';
import { testInput } from '../../helpers/run-input.js';

const verdict = (pass: boolean, signature = 'sig-a'): Verdict => ({
  pass,
  checks: [],
  outOfScope: [],
  protectedChanged: [],
  changedFiles: ['a.js'],
  signature,
  summary: pass ? 'ok' : 'check failed: npm test',
});

describe('the run state machine', () => {
  const base = () => initialState(testInput({ repo: '/r', model: 'scripted:/s.json' }));

  it('passes → succeeded; first failure → retry; the same failure twice → a person at once', () => {
    const s = base();
    expect(afterVerdict(s, verdict(true), undefined)).toEqual({ next: 'succeeded' });
    expect(afterVerdict(s, verdict(false), undefined)).toEqual({ next: 'retry', attempt: 2 });
    expect(afterVerdict(s, verdict(false, 'x'), 'x')).toMatchObject({ next: 'needs_human', reason: expect.stringMatching(/same failure twice/) });
    expect(afterVerdict(s, verdict(false, 'y'), 'x')).toEqual({ next: 'retry', attempt: 2 });
  });

  it('stops retrying after three attempts in all', () => {
    const s = base();
    s.attempt = 3;
    expect(afterVerdict(s, verdict(false, 'z'), 'y')).toMatchObject({ next: 'needs_human', reason: expect.stringMatching(/no attempts left \(3\)/) });
  });

  it('names the budget that ran out', () => {
    const s = base();
    const limits = { maxTurns: 5, maxTokens: 1000, maxUsd: 1, maxWallMs: 60_000 };
    expect(budgetExceeded(s.budget, limits)).toBeUndefined();
    expect(budgetExceeded({ ...s.budget, turns: 5 }, limits)).toBe('maxTurns (5)');
    expect(budgetExceeded({ ...s.budget, input: 600, cacheRead: 500 }, limits)).toBe('maxTokens (1000)');
    expect(budgetExceeded({ ...s.budget, costUsd: 1.2 }, limits)).toBe('maxUsd (1)');
    expect(budgetExceeded({ ...s.budget, wallMs: 61_000 }, limits)).toBe('maxWallMs (60000)');
  });

  it('rejects unknown, decided and expired approvals with a reason the sender reads', () => {
    const s = base();
    s.pendingApprovals.push({ id: 'ap-1', toolUseId: 't', tool: 'run_command', summary: 'npm i', rule: 'r', reason: 'x', requestedAt: '', expiresAt: '' });
    expect(approvalProblem(s, new Set(), new Set(), { approvalId: 'ap-1', approve: true })).toBeUndefined();
    expect(approvalProblem(s, new Set(), new Set(), { approvalId: 'ap-2', approve: true })).toMatch(/unknown approval ap-2 \(pending: ap-1\)/);
    expect(approvalProblem(s, new Set(['ap-1']), new Set(), { approvalId: 'ap-1', approve: true })).toMatch(/already decided/);
    expect(approvalProblem(s, new Set(), new Set(['ap-1']), { approvalId: 'ap-1', approve: true })).toMatch(/timed out/);
    expect(approvalProblem(s, new Set(), new Set(), { approvalId: 'ap-1', approve: 'yes' as never })).toMatch(/true or false/);
  });

  it('keeps the live log bounded', () => {
    const s = base();
    for (let i = 0; i < MAX_LOG_LINES + 25; i++) log(s, 'now', 'note', `line ${i}`);
    expect(s.log).toHaveLength(MAX_LOG_LINES);
    expect(s.log[s.log.length - 1]!.seq).toBe(MAX_LOG_LINES + 25);
  });
});
