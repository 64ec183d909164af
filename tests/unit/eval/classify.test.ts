import { describe, expect, it } from 'vitest';
import { classifyFailure, judgeFailure, type FailureFacts } from '../../../src/eval/classify.js';

const base: FailureFacts = {
  outcome: 'blocked',
  reason: 'abandoned by kiln eval',
  needsHumanReasons: [],
  verdictPass: null,
  testsModified: false,
  toolCalls: 6,
  toolDenied: 0,
  toolErrors: 0,
  approvalTimeouts: 0,
};
const f = (o: Partial<FailureFacts>) => classifyFailure({ ...base, ...o });

describe('classifyFailure', () => {
  it('is null for a success that left the tests alone', () => {
    expect(f({ outcome: 'succeeded' })).toBeNull();
  });

  it('calls a success that changed a test file a verifier failure', () => {
    expect(f({ outcome: 'succeeded', testsModified: true })).toBe('verifier');
  });

  it('blames the model for script errors and fatal model errors, even when a verdict failed too', () => {
    expect(f({ reason: 'agentTurn failed: ScriptError: model turn 3: script x step 3: the script has 2 steps', verdictPass: false })).toBe('model');
    expect(f({ reason: 'agentTurn failed: ModelFatalError: model turn 1: 401 authentication_error' })).toBe('model');
  });

  it('blames the infrastructure for setup, sandbox and activity failures and for runs the eval lost', () => {
    expect(f({ reason: 'setup command failed: npm ci\nregistry unreachable' })).toBe('infrastructure');
    expect(f({ reason: 'verify failed: SandboxUnavailableError: bwrap missing' })).toBe('infrastructure');
    expect(f({ reason: 'agentTurn failed: ModelRetryableError: 529 overloaded' })).toBe('infrastructure');
    expect(f({ outcome: 'error', reason: '' })).toBe('infrastructure');
    expect(f({ outcome: 'cancelled', evalError: 'the eval gave up waiting after 900 s; run cancelled' })).toBe('infrastructure');
  });

  it('blames policy for approval timeouts and for runs dominated by denials', () => {
    expect(f({ approvalTimeouts: 1, verdictPass: false })).toBe('policy');
    expect(f({ needsHumanReasons: ['approval ap-2 timed out; a person must decide how to go on'] })).toBe('policy');
    expect(f({ toolCalls: 5, toolDenied: 4, verdictPass: false })).toBe('policy');
    // one denial among many calls is just a correction, not the cause
    expect(f({ toolCalls: 9, toolDenied: 1, verdictPass: false })).toBe('verifier');
    expect(f({ toolCalls: 12, toolDenied: 2, verdictPass: false })).toBe('verifier');
  });

  it('blames the tools when most calls failed', () => {
    expect(f({ toolCalls: 5, toolErrors: 4, verdictPass: false })).toBe('tool');
    expect(f({ toolCalls: 10, toolErrors: 3, verdictPass: false })).toBe('verifier');
  });

  it('blames the model for being stuck or over budget', () => {
    expect(f({ reason: 'budget exhausted: maxTurns (20)' })).toBe('model');
    expect(f({ needsHumanReasons: ['stuck: the same call 3 times with no progress'], verdictPass: false })).toBe('model');
  });

  it('blames the verifier for a failing verdict, and the model when there was nothing to verify', () => {
    expect(f({ verdictPass: false, needsHumanReasons: ['no attempts left (3): check failed: npm test (exit 1)'] })).toBe('verifier');
    expect(f({ verdictPass: null })).toBe('model');
  });

  describe('a verifier that refuses correct work is scored as the verifier', () => {
    /** as a run records it: the scripted server's answer to the turn after the last step */
    const pastScript = 'agentTurn failed: ScriptError: model turn 4: script fix-it step 4: the script ends after 3 steps, but the run asked for turn 4';
    const honest: Partial<FailureFacts> = { scripted: true, expectsSuccess: true, reason: pastScript, refusals: 1, verdictPass: false };

    it('the scripted fix was refused and the retry ran past the script: verifier, with why', () => {
      expect(judgeFailure({ ...base, ...honest })).toEqual({ failureClass: 'verifier', note: 'the verifier refused; the retry ran past the script' });
      // the refusal is in events.jsonl even when the last verdict on record is another
      expect(f({ ...honest, verdictPass: null })).toBe('verifier');
    });

    it('any failure after the refusal of a script that did all it says: verifier', () => {
      const stuck = judgeFailure({
        ...base,
        ...honest,
        reason: 'abandoned by kiln eval',
        needsHumanReasons: ['stuck: the same call 3 times with no progress'],
      });
      expect(stuck).toEqual({ failureClass: 'verifier', note: 'the verifier refused work the task calls correct, and the run failed after it' });
    });

    it('control: a script that ran out before any verdict is the model’s (it never finished)', () => {
      expect(f({ ...honest, refusals: 0, verdictPass: null })).toBe('model');
    });

    it('control: a script that disagrees with the run after the refusal is the model’s', () => {
      const mismatch = 'agentTurn failed: ScriptError: model turn 2: script fix-it step 2: expected a tool result containing "cents * pct", got: "…"';
      expect(f({ ...honest, reason: mismatch })).toBe('model');
    });

    it('control: a task that does not expect success (a cheat) or a model that is no script keeps the old rule', () => {
      expect(f({ ...honest, expectsSuccess: false })).toBe('model');
      expect(f({ ...honest, scripted: false })).toBe('model');
    });

    it('control: the machinery failing after the refusal is still infrastructure', () => {
      expect(f({ ...honest, reason: 'verify failed: SandboxUnavailableError: bwrap missing' })).toBe('infrastructure');
      expect(f({ ...honest, reason: '', evalError: 'the eval gave up waiting after 900 s; run cancelled' })).toBe('infrastructure');
    });
  });
});
