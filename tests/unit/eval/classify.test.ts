import { describe, expect, it } from 'vitest';
import { classifyFailure, type FailureFacts } from '../../../src/eval/classify.js';

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
});
