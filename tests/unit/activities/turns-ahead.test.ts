/**
 * An activity goes on to the next turn only where the workflow, seeing the turn, would start the
 * next one with the same input (activities/run-ahead.ts, turnsAhead). A hostile model must not be
 * able to use it to outrun what the workflow checks between turns: the budgets, the stuck
 * detector, continue-as-new, a call that needs a person or the workflow's own answer.
 */
import { describe, expect, it } from 'vitest';
import type { AgentTurnInput, AgentTurnResult, RunToolResult, TurnsAhead, TurnsTaken } from '../../../src/shared/contracts.js';
import { MAX_TURNS_AHEAD, turnsAhead, turnsAheadMs } from '../../../src/activities/run-ahead.js';
import { freshStuck } from '../../../src/loop/stuck.js';
import { ModelError } from '../../../src/model/errors.js';
import { ApplicationFailure } from '@temporalio/common';

const usage = { input: 100, output: 10, cacheRead: 0, cacheWrite: 0 };

/** A turn whose calls all ran here, each with its result. */
function turnOf(...calls: Array<{ name: string; result: RunToolResult; fingerprint?: string }>): AgentTurnResult {
  const views = calls.map((c, i) => ({ id: `c${i}-${Math.random()}`, name: c.name, fingerprint: c.fingerprint ?? `fp-${Math.random()}`, summary: c.name }));
  return {
    calls: views,
    text: '',
    stopReason: 'tool_use',
    usage,
    costUsd: 0.01,
    ran: views.map((v, i) => ({ id: v.id, result: calls[i]!.result })),
  };
}

const done = (effect: 'read' | 'command' | 'edit', extra: Partial<Extract<RunToolResult, { status: 'done' }>> = {}): RunToolResult => ({
  status: 'done',
  ok: true,
  effect,
  summary: `${effect} ${Math.random()}`,
  ...extra,
});
const echo = () => ({ name: 'run_command', result: done('command') });

function input(over: Partial<TurnsAhead> = {}, inp: Partial<AgentTurnInput> = {}): AgentTurnInput {
  return {
    runId: 'r',
    repo: '/repo',
    turn: 1,
    attempt: 1,
    memory: { plan: [], touchedFiles: ['a.js'], failures: [] },
    runAhead: {
      grants: ['g1'],
      turns: {
        lastTurn: 150,
        budgets: { maxTurns: 40, maxTokens: 1e9, maxUsd: 100, maxWallMs: 60_000 },
        used: { turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costUsd: 0, wallMs: 0 },
        stuck: freshStuck(),
        cycles: true,
        ...over,
      },
    },
    ...inp,
  };
}

/** Runs turnsAhead with a model whose turns are `script` (turn 2 first); returns the inputs it was given. */
async function walk(inp: AgentTurnInput, first: AgentTurnResult, script: (turn: number) => AgentTurnResult, limitMs = 60_000, now?: () => number) {
  const asked: AgentTurnInput[] = [];
  const more = await turnsAhead(
    inp,
    first,
    async (i) => {
      asked.push(i);
      return script(i.turn);
    },
    limitMs,
    now,
  );
  return { asked, more };
}

describe('turns an activity takes after its first', () => {
  it('goes on through turns of commands, reads and edits, each with the input the workflow would give it', async () => {
    const first = turnOf({ name: 'edit', result: done('edit', { path: 'b.js' }) });
    const { asked, more } = await walk(input(), first, (t) =>
      t === 2
        ? turnOf({ name: 'read_file', result: done('read') })
        : t === 3
          ? turnOf({ name: 'run_command', result: done('command', { changedPaths: ['gen.js'] }) })
          : { ...turnOf(), calls: [{ id: 'f', name: 'finish', fingerprint: 'f', summary: 'finish' }], ran: [] },
    );
    expect(more.map((_, i) => i + 2)).toEqual([2, 3, 4]);
    expect(asked.map((i) => i.turn)).toEqual([2, 3, 4]);
    // the edit makes turn 2 take a checkpoint; a read leaves the worktree as it was
    expect(asked.map((i) => i.checkpoint)).toEqual([true, false, true]);
    // the compaction memory has the files edited, by the tool or a command, as the workflow touches them
    expect(asked[2]!.memory?.touchedFiles).toEqual(['a.js', 'b.js', 'gen.js']);
    // the run's grants go along; the token budget left counts the turns taken so far
    expect(asked.every((i) => i.runAhead?.grants?.[0] === 'g1' && i.runAhead.turns === undefined)).toBe(true);
    expect(asked.map((i) => i.tokensLeft)).toEqual([1e9 - 110, 1e9 - 220, 1e9 - 330]);
    // nothing the workflow alone decides is carried into a later turn
    expect(asked.every((i) => i.userText === undefined && i.toolResults === undefined && i.events === undefined)).toBe(true);
  });

  it('control: a turn that ends the attempt or needs the workflow hands back', async () => {
    const cases: Array<[string, AgentTurnResult]> = [
      ['no call (the end of the attempt, or talk)', turnOf()],
      ['finish (the stop gate answers it)', { ...turnOf(), calls: [{ id: 'f', name: 'finish', fingerprint: 'f', summary: 'finish' }], ran: [] }],
      [
        'a call that needs a person (not run here)',
        { ...turnOf(echo()), calls: [...turnOf(echo()).calls, { id: 'x', name: 'run_command', fingerprint: 'x', summary: 'npm publish' }] },
      ],
      [
        'a denied call (the workflow records the failure)',
        turnOf({ name: 'run_command', result: { status: 'denied', summary: 'no', rule: 'r', reason: 'no' } }),
      ],
      ['a plan (the workflow keeps it)', turnOf({ name: 'update_plan', result: done('read', { plan: [{ step: 'x', status: 'pending' }] }) })],
      ['a reflection', turnOf({ name: 'reflect', result: { status: 'done', ok: true, effect: 'reflect', summary: 'r' } })],
      ['a turn the token budget stopped', { ...turnOf(echo()), budgetStop: 'maxTokens (1)' }],
    ];
    for (const [why, first] of cases) {
      const { more } = await walk(input(), first, () => turnOf(echo()));
      expect(more, why).toEqual([]);
    }
    // and the control the cases need: the same input goes on after an ordinary turn
    expect((await walk(input(), turnOf(echo()), (t) => (t < 4 ? turnOf(echo()) : turnOf()))).more).toHaveLength(3);
  });

  it('attack: a model repeating one call is stopped at the turn the workflow would stop it', async () => {
    const same = () => ({ name: 'run_command', fingerprint: 'same', result: { ...done('command'), summary: 'echo same → exit code 0' } as RunToolResult });
    const { more } = await walk(input(), turnOf(same()), () => turnOf(same()));
    // the third identical call is stuck (STUCK_LIMITS.sameCall): turns 2 and 3 were taken, not 4
    expect(more).toHaveLength(2);
    // the workflow's detector state carries in: two repeats seen before this activity leave one
    const stuck = freshStuck();
    stuck.lastCall = 'same\0echo same → exit code 0';
    stuck.sameCallStreak = 1;
    expect((await walk(input({ stuck }), turnOf(same()), () => turnOf(same()))).more).toHaveLength(1);
    // and the workflow's copy is not changed by the activity's look-ahead
    expect(stuck.sameCallStreak).toBe(1);
  });

  it('attack: the budgets hold as between activities (turns, tokens, cost, wall time)', async () => {
    const base = { turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, costUsd: 0, wallMs: 0 };
    const go = (over: Partial<TurnsAhead>, now?: () => number) => walk(input(over), turnOf(echo()), () => turnOf(echo()), 60_000, now);
    expect((await go({ budgets: { maxTurns: 3, maxTokens: 1e9, maxUsd: 100, maxWallMs: 60_000 } })).more).toHaveLength(2);
    expect((await go({ budgets: { maxTurns: 40, maxTokens: 330, maxUsd: 100, maxWallMs: 60_000 } })).more).toHaveLength(2);
    expect((await go({ budgets: { maxTurns: 40, maxTokens: 1e9, maxUsd: 0.05, maxWallMs: 60_000 } })).more).toHaveLength(4);
    expect((await go({ used: { ...base, turns: 9 }, budgets: { maxTurns: 10, maxTokens: 1e9, maxUsd: 100, maxWallMs: 60_000 } })).more).toHaveLength(0);
    // wall time: the workflow's elapsed time when it scheduled the turn, plus the activity's own
    let t = 0;
    const clock = () => (t += 400);
    expect(
      (await go({ used: { ...base, wallMs: 59_000 }, budgets: { maxTurns: 40, maxTokens: 1e9, maxUsd: 100, maxWallMs: 60_000 } }, clock)).more,
    ).toHaveLength(2);
  });

  it('stops where the workflow continues as new, and at its own bounds of turns and time', async () => {
    expect((await walk(input({ lastTurn: 3 }), turnOf(echo()), () => turnOf(echo()))).more).toHaveLength(2);
    expect(
      (await walk(input({ budgets: { maxTurns: 1000, maxTokens: 1e12, maxUsd: 1e6, maxWallMs: 1e9 } }), turnOf(echo()), () => turnOf(echo()))).more,
    ).toHaveLength(MAX_TURNS_AHEAD);
    let t = 0;
    expect(
      (
        await walk(
          input(),
          turnOf(echo()),
          () => turnOf(echo()),
          1000,
          () => (t += 300),
        )
      ).more,
    ).toHaveLength(3);
    // off: a limit of 0, or a workflow that did not ask (a run from before the change)
    expect((await walk(input(), turnOf(echo()), () => turnOf(echo()), 0)).more).toEqual([]);
    expect((await walk({ ...input(), runAhead: { grants: [] } }, turnOf(echo()), () => turnOf(echo()))).more).toEqual([]);
  });

  it('reads its limit from the worker environment', () => {
    expect(turnsAheadMs({})).toBe(1000);
    expect(turnsAheadMs({ KILN_TURNS_AHEAD_MS: '0' })).toBe(0);
    expect(turnsAheadMs({ KILN_TURNS_AHEAD_MS: '250' })).toBe(250);
    expect(turnsAheadMs({ KILN_TURNS_AHEAD_MS: 'soon' })).toBe(1000);
    expect(turnsAheadMs({ KILN_TURNS_AHEAD_MS: '-1' })).toBe(1000);
  });

  it('a later turn that fails fails the activity as it would fail on its own, with the turns before it in the details', async () => {
    const first = turnOf(echo());
    const fault = (t: number) => {
      if (t === 4) throw new ModelError('rate_limit', 'rate limited (429)', { retryable: true, retryAfterMs: 3000 });
      return turnOf(echo());
    };
    const err = (await walk(input(), first, fault).catch((e: unknown) => e)) as ApplicationFailure;
    // Temporal paces it: the same type and retry-after as the turn's own activity would fail with
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'ModelRetryableError', nonRetryable: false, nextRetryDelay: 3000 });
    // turns 1 to 3 reach the workflow if this failure is the last
    const taken = (err.details?.[0] as TurnsTaken).turnsTaken;
    expect(taken.calls).toEqual(first.calls);
    expect(taken.more).toHaveLength(2);
  });

  it('a non-retryable fault in a later turn stays non-retryable', async () => {
    const err = (await walk(input(), turnOf(echo()), () => {
      throw new ModelError('auth', 'the model API rejected the credentials (401)', { retryable: false, status: 401 });
    }).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err).toMatchObject({ type: 'ModelFatalError', nonRetryable: true });
    expect((err.details?.[0] as TurnsTaken).turnsTaken.more).toBeUndefined();
  });
});
