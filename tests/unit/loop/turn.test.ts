/**
 * The turn loop's one decision, as both sides take it: the workflow reading a turn, and the turn
 * activity deciding whether it may take the next one itself.
 */
import { describe, expect, it } from 'vitest';
import { freshLoop, gateSatisfied, missingChecks, recordDone } from '../../../src/loop/state.js';
import { freshStuck } from '../../../src/loop/stuck.js';
import { beforeNextTurn, nextAfterTurn, outcomeOfRan, type BeforeTurn, type RanResult } from '../../../src/loop/turn.js';

const used = { turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costUsd: 0, wallMs: 0 };
const before = (over: Partial<BeforeTurn> = {}): BeforeTurn => ({
  nextTurn: 2,
  lastTurn: 10,
  mayContinueAsNew: true,
  used,
  budgets: { maxTurns: 40, maxTokens: 1e9, maxUsd: 100, maxWallMs: 60_000 },
  ...over,
});
const done = (summary: string, extra: Partial<Extract<RanResult, { status: 'done' }>> = {}): RanResult => ({
  status: 'done',
  ok: true,
  effect: 'command',
  summary,
  ...extra,
});

describe('what follows a turn', () => {
  it('a turn that did not start, a finish, a repetition, then what only the workflow answers', () => {
    expect(nextAfterTurn({ budgetStop: 'maxTokens (10)', finished: { gateSatisfied: true }, dirty: false })).toEqual({
      next: 'stop',
      end: 'budget',
      why: 'maxTokens (10)',
    });
    // a finish earlier in the turn wins over a repetition after it
    expect(nextAfterTurn({ finished: { gateSatisfied: false }, stuck: 'same call', dirty: true })).toEqual({ next: 'verify', gateSatisfied: false });
    expect(nextAfterTurn({ stuck: 'same call', workflowOnly: { ask: true, why: 'x' }, dirty: true })).toEqual({ next: 'stop', end: 'stuck', why: 'same call' });
    expect(nextAfterTurn({ workflowOnly: { ask: true, why: 'npm install' }, dirty: false })).toEqual({ next: 'ask', why: 'npm install' });
    expect(nextAfterTurn({ workflowOnly: { ask: false, why: 'a plan call' }, dirty: false })).toEqual({ next: 'hand_back', why: 'a plan call' });
    expect(nextAfterTurn({ dirty: true })).toEqual({ next: 'go_on', checkpoint: true });
  });

  it('between turns: continue-as-new when due and nothing holds the run, then the budgets', () => {
    expect(nextAfterTurn({ dirty: false }, before())).toEqual({ next: 'go_on', checkpoint: false });
    expect(beforeNextTurn(before({ nextTurn: 11 }), false)).toEqual({ next: 'continue_as_new' });
    expect(beforeNextTurn(before({ suggested: true }), false)).toEqual({ next: 'continue_as_new' });
    // an approval still pending holds the run where it is: the budgets still count
    expect(beforeNextTurn(before({ nextTurn: 11, mayContinueAsNew: false, used: { ...used, turns: 40 } }), false)).toEqual({
      next: 'stop',
      end: 'budget',
      why: 'maxTurns (40)',
    });
    expect(beforeNextTurn(before({ used: { ...used, wallMs: 60_000 } }), true)).toEqual({ next: 'stop', end: 'budget', why: 'maxWallMs (60000)' });
  });

  it('reads a turn the activity ran as the workflow would: touched files, the checkpoint, the stuck detector', () => {
    const calls = [
      { id: 'a', fingerprint: 'fa' },
      { id: 'b', fingerprint: 'fb' },
    ];
    const touched = ['x.js'];
    const stuck = freshStuck();
    const out = outcomeOfRan(
      {
        calls,
        ran: [
          { id: 'a', result: done('edit', { effect: 'edit', path: 'y.js' }) },
          { id: 'b', result: done('ran', { changedPaths: ['x.js', 'z.js'] }) },
        ],
      },
      stuck,
      true,
      touched,
    );
    expect(out).toEqual({ dirty: true });
    expect(touched).toEqual(['x.js', 'y.js', 'z.js']);
    expect(stuck.sameCallStreak).toBe(1);
    expect(outcomeOfRan({ calls: [], ran: [] }, freshStuck(), true, []).workflowOnly?.ask).toBe(false);
    expect(outcomeOfRan({ calls, ran: [{ id: 'a', result: done('r') }] }, freshStuck(), true, []).workflowOnly).toBeDefined();
    expect(
      outcomeOfRan({ calls: [calls[0]!], ran: [{ id: 'a', result: { status: 'ask', summary: 'npm install' } }] }, freshStuck(), true, []).workflowOnly,
    ).toEqual({ ask: true, why: 'npm install' });
    expect(outcomeOfRan({ calls: [calls[0]!], ran: [{ id: 'a', result: done('p', { effect: 'plan' }) }] }, freshStuck(), true, []).workflowOnly?.ask).toBe(
      false,
    );
  });
});

describe('the stop gate', () => {
  it('after an edit, waits for every check; a command that changed files counts as an edit', () => {
    const loop = freshLoop(false);
    const checks = ['npm test', 'npm run lint'];
    expect(gateSatisfied(loop, checks)).toBe(true);
    expect(recordDone(loop, { effect: 'edit', path: 'a.js' }, checks)).toEqual(['a.js']);
    expect(loop.dirty).toBe(true);
    expect(gateSatisfied(loop, checks)).toBe(false);
    recordDone(loop, { effect: 'command', checksRan: ['npm test'] }, checks);
    expect(missingChecks(loop, checks)).toEqual(['`npm run lint`']);
    expect(loop.editedFiles).toEqual(['a.js']);
    recordDone(loop, { effect: 'command', checkRan: 'npm run lint' }, checks);
    expect(gateSatisfied(loop, checks)).toBe(true);
    expect(loop.editedFiles).toEqual([]);
    expect(recordDone(loop, { effect: 'command', changedPaths: ['b.js'] }, checks)).toEqual(['b.js']);
    expect(gateSatisfied(loop, checks)).toBe(false);
  });
});
