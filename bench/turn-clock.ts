/**
 * When each model request of a run left the worker: the activities' model client is wrapped in
 * the injected deps, so the Temporal run and the in-process loop are timed by the same code at
 * the same point, and "time to the first model request" is the moment the request is sent.
 */
import { performance } from 'node:perf_hooks';
import type { ActivityDeps } from '../src/activities/index.js';
import { temporalLedger } from '../src/activities/budget.js';
import { spread, type Spread } from './stats.js';

export class TurnClock {
  /** turn → performance.now() of its first model request (a retried turn keeps its first) */
  readonly requestAt = new Map<number, number>();

  /** each budget ledger call's round trip (reserve before a model call, settle when it is billed), in ms */
  readonly ledgerMs = { reserve: [] as number[], settle: [] as number[] };

  wrap(deps: ActivityDeps): ActivityDeps {
    const ledger = deps.ledger ?? temporalLedger();
    const timed =
      <A extends unknown[], R>(kind: 'reserve' | 'settle', f: (...a: A) => Promise<R>) =>
      async (...a: A): Promise<R> => {
        const t = performance.now();
        try {
          return await f(...a);
        } finally {
          this.ledgerMs[kind].push(performance.now() - t);
        }
      };
    return {
      ...deps,
      ledger: { reserve: timed('reserve', ledger.reserve), settle: timed('settle', ledger.settle), release: ledger.release },
      model: async (spec, runId) => {
        const client = await deps.model(spec, runId);
        return {
          scripted: client.scripted,
          model: client.model,
          create: (req, opts) => {
            if (!this.requestAt.has(opts.turn)) this.requestAt.set(opts.turn, performance.now());
            return client.create(req, opts);
          },
        };
      },
    };
  }

  /**
   * One sample per turn but the last: from turn N's model request to turn N+1's — the model
   * call, every tool call of the turn, and whatever orchestration sits between them.
   */
  turnMs(): number[] {
    const turns = [...this.requestAt.keys()].sort((a, b) => a - b);
    const out: number[] = [];
    for (let i = 1; i < turns.length; i++) out.push(this.requestAt.get(turns[i]!)! - this.requestAt.get(turns[i - 1]!)!);
    return out;
  }

  turnSpread(): Spread {
    return spread(this.turnMs());
  }

  firstRequestAt(): number {
    const at = this.requestAt.get(1);
    if (at === undefined) throw new Error('no model request was made');
    return at;
  }
}
