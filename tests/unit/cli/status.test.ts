import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../../src/cli/actions/status.js';
import { diskWaitLine } from '../../../src/client/disk-wait.js';
import { initialState } from '../../../src/workflows/machine.js';
import { testInput } from '../../helpers/run-input.js';

describe('kiln status', () => {
  it('shows per-turn and total tokens and cost, the plan and what waits', () => {
    const st = initialState(testInput({ repo: '/r', model: 'scripted:/s.json', runId: 'run-1' }));
    st.phase = 'awaiting_approval';
    st.turn = 2;
    st.budget = { turns: 2, input: 300, output: 80, cacheRead: 9000, cacheWrite: 4000, costUsd: 0.0123, wallMs: 4200 };
    st.recentTurns = [
      { turn: 1, input: 200, output: 40, cacheRead: 0, cacheWrite: 4000, costUsd: 0.008 },
      { turn: 2, input: 100, output: 40, cacheRead: 9000, cacheWrite: 0, costUsd: 0.0043 },
    ];
    st.plan = [
      { step: 'find it', status: 'done' },
      { step: 'fix it', status: 'in_progress' },
    ];
    st.pendingApprovals = [
      { id: 'ap-1', toolUseId: 't', tool: 'run_command', summary: 'run_command: npm run lint', rule: 'r', reason: 'x', requestedAt: '', expiresAt: '' },
    ];
    const text = formatStatus(st);
    expect(text).toContain('SCRIPTED');
    expect(text).toContain('in 300 · out 80 · cache read 9000 · cache write 4000 · $0.0123');
    expect(text).toMatch(/turn {3}2 {2}in 100 · out 40 · cache read 9000 · cache write 0 · \$0\.0043/);
    expect(text).toContain('[x] find it');
    expect(text).toContain('[~] fix it');
    expect(text).toContain('kiln approve run-1 ap-1');
  });

  it("a run of parallel attempts shows each child as it stands, and what each waits for under the child's id", () => {
    const parent = initialState(testInput({ repo: '/r', model: 'scripted:/s.json', runId: 'run-2' }));
    parent.phase = 'planning';
    const waiting = initialState(testInput({ repo: '/r', model: 'scripted:/a.json', runId: 'run-2-a1' }));
    waiting.phase = 'awaiting_approval';
    waiting.pendingApprovals = [
      { id: 'ap-1', toolUseId: 't', tool: 'run_command', summary: 'run_command: npm run lint', rule: 'r', reason: 'x', requestedAt: '', expiresAt: '' },
    ];
    const text = formatStatus(parent, undefined, {
      children: [waiting, { runId: 'run-2-a2', model: 'scripted:/b.json', phase: 'blocked', reason: 'budget exhausted' }],
    });
    expect(text).toContain('attempts:  2 at once');
    expect(text).toContain('run-2-a1: awaiting_approval (scripted:/a.json)');
    expect(text).toContain('waiting: ap-1 run_command: npm run lint — kiln approve run-2-a1 ap-1');
    expect(text).toContain('run-2-a2: blocked — budget exhausted (scripted:/b.json)');
  });

  it('a run waiting on a full disk says so, with the try and when the next one is due; an ended run does not', () => {
    const st = initialState(testInput({ repo: '/r', model: 'scripted:/s.json', runId: 'run-1' }));
    st.phase = 'verifying';
    const line = diskWaitLine({ activity: 'currentTree', attempt: 3, maxAttempts: 5, nextAt: 20_000 }, 8_000);
    expect(formatStatus(st, undefined, { disk: line })).toContain(
      "  disk:      the worker's disk is full: currentTree waits for space (try 3 of 5 in 12 s); free space on the worker to let the run go on",
    );
    st.phase = 'succeeded';
    expect(formatStatus(st, undefined, { disk: line })).not.toContain('disk:');
  });
});
