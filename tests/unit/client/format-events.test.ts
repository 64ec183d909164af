/** `kiln logs`: the run's log lines, whole, and the retries the worker recorded. */
import { describe, expect, it } from 'vitest';
import { formatEvents } from '../../../src/client/runs.js';

describe('kiln logs', () => {
  it('prints each line whole and shows an activity retried after a crash', () => {
    const long = `run_command: ${'x'.repeat(380)}`;
    const jsonl = [
      JSON.stringify({ at: '2026-12-01T10:00:01.000Z', type: 'turn', seq: 1, text: 'turn 1' }),
      JSON.stringify({ at: '2026-12-01T10:00:02.000Z', type: 'tool', seq: 2, text: long }),
      JSON.stringify({ at: '2026-12-01T10:00:09.000Z', type: 'activity_retry', activity: 'agentTurn', attempt: 2 }),
      JSON.stringify({ at: '2026-12-01T10:00:10.000Z', type: 'setup', commands: ['npm ci'], ok: true }),
    ].join('\n');
    expect(formatEvents(jsonl)).toEqual(['10:00:01 · turn 1', `10:00:02   ↳ ${long}`, '10:00:09   ↻ agentTurn retried (attempt 2)']);
  });
});
