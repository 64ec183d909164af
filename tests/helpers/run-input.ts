import { randomBytes } from 'node:crypto';
import type { RunInput } from '../../src/shared/types.js';

/** A RunInput with test-friendly timeouts; override what a test is about. */
export function testInput(over: Partial<RunInput> & Pick<RunInput, 'repo' | 'model'>): RunInput {
  return {
    runId: `t-${randomBytes(4).toString('hex')}`,
    goal: 'getSession returns revoked sessions; fix it',
    checks: [],
    setup: [],
    maxTokens: 4096,
    sandbox: 'bwrap',
    approvalMode: 'default',
    allowTestEdits: false,
    approvalTimeoutMs: 10 * 60_000,
    humanTimeoutMs: 10 * 60_000,
    budgets: { maxTurns: 40, maxTokens: 5_000_000, maxUsd: 100, maxWallMs: 30 * 60_000 },
    maxAttempts: 3,
    heartbeatTimeoutMs: 3000,
    commandTimeoutMs: 60_000,
    ...over,
  };
}
