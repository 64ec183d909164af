/**
 * The run context's snapshot is the continue-as-new carry: a carry recorded by a real run (before
 * kilnRun was split) must load and come back out unchanged, field for field, in the same order.
 */
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RunInput } from '../../../src/shared/types.js';
import { RunContext, type Carry } from '../../../src/workflows/context.js';

function recordedStart(): { input: RunInput; carry: Carry; json: string } {
  const file = fileURLToPath(new URL('../../replay/histories/continued-as-new.json', import.meta.url));
  const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
  const [input, carry] = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads!.map((p) => Buffer.from(p.data!).toString());
  return { input: JSON.parse(input!) as RunInput, carry: JSON.parse(carry!) as Carry, json: carry! };
}

describe('the run context', () => {
  it('takes a recorded carry and gives it back unchanged as its snapshot', () => {
    const { input, carry, json } = recordedStart();
    const ctx = new RunContext(input, carry);
    expect(ctx.state.turn).toBeGreaterThan(0);
    expect(ctx.turnAtRunStart).toBe(carry.state.turn);
    expect(JSON.stringify(ctx.snapshot(carry.loop))).toBe(json);
  });

  it('hands the carried log to the first activity once, then only new lines', () => {
    const { input, carry } = recordedStart();
    const ctx = new RunContext(input, carry);
    expect(ctx.takeUnwritten()).toEqual(carry.state.log);
    expect(ctx.takeUnwritten()).toEqual([]);
    ctx.note('note', 'after the carry');
    expect(ctx.takeUnwritten().map((l) => l.text)).toEqual(['after the carry']);
  });

  it('keeps the last failures only, so the carry stays small', () => {
    const { input, carry } = recordedStart();
    const ctx = new RunContext(input, { ...carry, failures: [] });
    for (let i = 0; i < 15; i++) ctx.fail(`attempt ${i}: ${'x'.repeat(400)}`);
    expect(ctx.failures).toHaveLength(10);
    expect(ctx.failures[0]).toMatch(/^attempt 5: x+$/);
    expect(ctx.failures[0]!.length).toBe(300);
  });
});
