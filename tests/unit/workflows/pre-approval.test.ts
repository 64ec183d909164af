/** What a pre-approval must look like before the run holds it (the Update's validator, the Signal's filter). */
import { describe, expect, it } from 'vitest';
import { MAX_PRE_APPROVALS, initialState, preApprovalProblem } from '../../../src/workflows/machine.js';
import { PRE_APPROVAL_MAX_CHARS, type PreApproval } from '../../../src/shared/types.js';
import { testInput } from '../../helpers/run-input.js';

const state = () => ({ ...initialState(testInput({ repo: '/r', model: 'scripted:x' })), phase: 'editing' as const });

describe('preApprovalProblem', () => {
  it('control: an exact command, once or for the run, is held', () => {
    expect(preApprovalProblem(state(), { text: 'npm run lint', by: 'alice' })).toBeUndefined();
    expect(preApprovalProblem(state(), { text: 'npm run lint', scope: 'run' })).toBeUndefined();
  });

  it('refuses what could not be matched or floods the state, saying what is wrong', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ text: '' }, /needs the exact command/],
      [{ text: '   ' }, /needs the exact command/],
      [{}, /needs the exact command/],
      [{ text: 'x'.repeat(PRE_APPROVAL_MAX_CHARS + 1) }, /at most 2000 characters/],
      [{ text: 'npm test', scope: 'forever' }, /scope must be "once" or "run"/],
      [{ text: 'npm test', by: 42 }, /by must be a name/],
    ];
    for (const [p, why] of bad) expect(preApprovalProblem(state(), p as PreApproval), JSON.stringify(p)).toMatch(why);
    const full = state();
    full.preApprovals = Array.from({ length: MAX_PRE_APPROVALS }, (_, i) => ({ id: `pre-${i}`, text: `c${i}`, scope: 'once', by: 'a', at: '', answered: [] }));
    expect(preApprovalProblem(full, { text: 'npm test' })).toMatch(/already holds 50/);
    expect(preApprovalProblem({ ...state(), phase: 'succeeded' }, { text: 'npm test' })).toMatch(/already ended/);
  });
});
