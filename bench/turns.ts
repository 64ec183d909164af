/**
 * The turn benchmark: one scripted task of N turns through Temporal (real dev server, real
 * worker) and through the in-process loop (same activities, no Temporal), timed by the same
 * wrapper around the model client. A short in-process warm-up comes first, so neither measured
 * run pays for loading modules, JIT compilation or the scripted server's start.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultDeps } from '../src/activities/index.js';
import { closeSharedScriptedServer } from '../src/model/index.js';
import type { RunInput } from '../src/shared/types.js';
import { runInProcess } from './in-process.js';
import { round, spread, type Spread } from './stats.js';
import { CHECK_COMMAND, makeTaskRepo, writeTaskScript } from './task.js';
import { runThroughTemporal } from './through-temporal.js';
import { TurnClock } from './turn-clock.js';
import type { HistoryFigures } from './history.js';

export interface LoopFigures {
  /** model request of turn N → model request of turn N+1, in ms (N = 1 … turns−1) */
  turnMs: Spread;
  /** start (workflow start request / the loop's first line) → turn 1's model request */
  firstRequestMs: number;
  wallMs: number;
}

export interface TurnBenchResult {
  turns: number;
  sandbox: 'bwrap' | 'off';
  temporal: LoopFigures & { serverStartMs: number; workerStartMs: number };
  inProcess: LoopFigures;
  overhead: {
    /** Temporal ÷ in-process */
    p50Ratio: number;
    p95Ratio: number;
    wallRatio: number;
    /** Temporal p50 − in-process p50: what each turn pays for durability */
    p50AddedMs: number;
  };
  /** the budget ledger's round trips in the Temporal run (the in-process loop has no ledger) */
  ledger: { reserveMs: Spread; settleMs: Spread; perTurnP50Ms: number; shareOfTurnP50: number; turnNoiseMs: number };
  history: HistoryFigures;
}

export interface TurnBenchOptions {
  turns?: number;
  sandbox?: 'bwrap' | 'off';
  log?: (line: string) => void;
}

const WARMUP_TURNS = 3;

function benchInput(repo: string, script: string, turns: number, sandbox: 'bwrap' | 'off', tag: string): RunInput {
  return {
    runId: `bench-${tag}-${randomBytes(3).toString('hex')}`,
    repo,
    goal: `benchmark: ${turns} scripted turns of cheap tool calls`,
    checks: [CHECK_COMMAND],
    setup: [],
    model: `scripted:${script}`,
    maxTokens: 4096,
    sandbox,
    approvalMode: 'default',
    allowTestEdits: false,
    approvalTimeoutMs: 60_000,
    // a failed verification must end the run soon, not wait for a person
    humanTimeoutMs: 1000,
    // the conversation grows every turn: token and cost budgets must not be what stops the run
    budgets: { maxTurns: Math.max(120, turns + 20), maxTokens: 1e8, maxUsd: 500, maxWallMs: 30 * 60_000 },
    maxAttempts: 1,
    heartbeatTimeoutMs: 3000,
    commandTimeoutMs: 60_000,
  };
}

function loopFigures(clock: TurnClock, startedAt: number, finishedAt: number): LoopFigures {
  return {
    turnMs: clock.turnSpread(),
    firstRequestMs: round(clock.firstRequestAt() - startedAt, 1),
    wallMs: Math.round(finishedAt - startedAt),
  };
}

export async function benchTurns(opts: TurnBenchOptions = {}): Promise<TurnBenchResult> {
  const turns = opts.turns ?? 100;
  const sandbox = opts.sandbox ?? 'bwrap';
  const log = opts.log ?? (() => {});
  const tmp = mkdtempSync(join(tmpdir(), 'kiln-bench-turns-'));
  try {
    const repo = makeTaskRepo(join(tmp, 'repo'), Math.max(turns, WARMUP_TURNS));
    const script = writeTaskScript(join(tmp, `task-${turns}.json`), turns);

    log(`  warm-up: ${WARMUP_TURNS} turns in process`);
    const warm = await runInProcess(benchInput(repo, writeTaskScript(join(tmp, 'warmup.json'), WARMUP_TURNS), WARMUP_TURNS, sandbox, 'warmup'), defaultDeps());
    if (!warm.verdictPass) throw new Error(`warm-up run failed verification: ${warm.state.verdict?.summary}`);

    log(`  ${turns} turns through Temporal…`);
    const t = await runThroughTemporal(benchInput(repo, script, turns, sandbox, 'temporal'), { tmp, log });
    if (t.result.turns !== turns) throw new Error(`the Temporal run took ${t.result.turns} turns, expected ${turns}`);

    log(`  ${turns} turns in process…`);
    const clock = new TurnClock();
    const startedAt = performance.now();
    const local = await runInProcess(benchInput(repo, script, turns, sandbox, 'local'), clock.wrap(defaultDeps()));
    const finishedAt = performance.now();
    if (!local.verdictPass) throw new Error(`the in-process run failed verification: ${local.state.verdict?.summary}`);
    if (local.state.turn !== turns) throw new Error(`the in-process run took ${local.state.turn} turns, expected ${turns}`);

    const temporal = {
      ...loopFigures(t.clock, t.startedAt, t.finishedAt),
      serverStartMs: Math.round(t.serverStartMs),
      workerStartMs: Math.round(t.workerStartMs),
    };
    const inProcess = loopFigures(clock, startedAt, finishedAt);
    return {
      turns,
      sandbox,
      temporal,
      inProcess,
      overhead: {
        p50Ratio: round(temporal.turnMs.p50 / inProcess.turnMs.p50),
        p95Ratio: round(temporal.turnMs.p95 / inProcess.turnMs.p95),
        wallRatio: round(temporal.wallMs / inProcess.wallMs),
        p50AddedMs: round(temporal.turnMs.p50 - inProcess.turnMs.p50, 1),
      },
      history: t.history,
      ledger: ledgerFigures(t.clock, temporal.turnMs),
    };
  } finally {
    await closeSharedScriptedServer();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * What the budget ledger adds to a turn: the reserve before its model call is on the turn's path;
 * the settle once the reply is billed runs beside the rest of the turn (the activity waits for it
 * before it completes). Read against the turn's own noise (p95 − p50).
 */
function ledgerFigures(clock: TurnClock, turn: Spread): TurnBenchResult['ledger'] {
  const reserveMs = spread(clock.ledgerMs.reserve);
  const settleMs = spread(clock.ledgerMs.settle);
  const perTurnP50Ms = reserveMs.p50;
  return { reserveMs, settleMs, perTurnP50Ms, shareOfTurnP50: round(perTurnP50Ms / turn.p50, 3), turnNoiseMs: round(turn.p95 - turn.p50, 2) };
}
