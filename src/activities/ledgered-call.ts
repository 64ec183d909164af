/**
 * One model call with its lines in the cost ledger, as the coder's turns and the reviewer both
 * make it: a line before the call, so a call whose worker died still counts; one when the API has
 * billed the reply; one after it answered, or failed.
 */
import { CancelledFailure } from '@temporalio/activity';
import { ModelError, type BilledReply, type ModelClient, type ModelRequest, type ModelResult, type ModelRole } from '../model/index.js';
import { appendJsonl } from '../store/run-files.js';
import { isDiskFull } from './disk.js';
import { activityContext, heartbeating } from './heartbeat.js';

/**
 * The cost ledger (an artifact of the run): one line per model call started, answered or failed,
 * and one `billed` line per reply the API billed, with its usage and cost, written as soon as the
 * stream said them. The run's spend is the sum of the billed lines, each message id once (an API
 * that honours idempotency keys serves a retried call's reply again under the same id).
 */
export const MODEL_LEDGER_FILE = 'model-calls.jsonl';

export interface LedgeredCall {
  /** the run's model-calls.jsonl */
  ledger: string;
  /** the idempotency key: the same logical call has the same one on every retry */
  call: string;
  /** the workflow's turn counter, or the review's number (the scripted server answers by it) */
  turn: number;
  /** said on the start and billed lines of a reviewer's call; a coder's lines say none */
  role?: ModelRole;
  /** the start line's fields besides at, call, event and role */
  start: Record<string, unknown>;
  /** the call as its errors name it ('model turn 3'), and as its cancel does ('turn 3') */
  names: { error: string; cancel: string };
  /**
   * A reply is paid for the moment it arrives: a full disk while noting it must not lose it (a
   * retry would call the model again), so its lines wait here until the caller has saved what the
   * call gave it, then go to the ledger (writeLedgerBacklog).
   */
  backlog: Record<string, unknown>[];
  /** called once the request has been handed to the model client */
  asking?: () => void;
  /** the call's reservation in the budget ledger (activities/budget.ts); absent: the run has none */
  budget?: CallBudget;
}

/** What a call does in the budget ledger around it. */
export interface CallBudget {
  /** after the start line, before anything is sent: throws when the call does not fit */
  reserve(): Promise<void>;
  /** a billed reply settles the reservation with what it cost */
  settle(b: BilledReply): Promise<void>;
  /** a call that failed unbilled holds nothing any more (a failed release is let go when the run ends) */
  release(): Promise<void>;
}

/** The call, heartbeating, with its ledger lines; a cancel the workflow asked for ends it as a CancelledFailure. */
export async function ledgeredCall(client: ModelClient, req: ModelRequest, c: LedgeredCall): Promise<ModelResult> {
  const role = c.role ? { role: c.role } : {};
  await appendJsonl(c.ledger, { at: new Date().toISOString(), call: c.call, event: 'start', ...role, ...c.start });
  // durable the moment the stream says what the reply cost: a reply that cannot be read, or
  // whose worker dies before its result is saved, was billed all the same
  await c.budget?.reserve();
  let billed = false;
  const onBilled = async (b: BilledReply) => {
    billed = true;
    await noteLine(c.ledger, { at: new Date().toISOString(), call: c.call, event: 'billed', ...role, ...b }, c.backlog);
    await c.budget?.settle(b);
  };
  const signal = activityContext()?.cancellationSignal;
  let res: ModelResult;
  try {
    res = await heartbeating(() => {
      const call = client.create(req, { signal, turn: c.turn, idempotencyKey: c.call, ...role, onBilled });
      c.asking?.();
      return call;
    });
  } catch (err) {
    await appendJsonl(c.ledger, {
      at: new Date().toISOString(),
      call: c.call,
      event: 'failed',
      error: String((err as Error)?.message ?? err).slice(0, 300),
    }).catch(() => undefined);
    if (!billed) await c.budget?.release().catch(() => undefined);
    // the SDK's abort error is the cancel the workflow asked for: said as one, it is not a failure of the call
    if (signal?.aborted) throw new CancelledFailure(`${c.names.cancel}: the model call was cancelled`);
    throw err instanceof ModelError ? err.withContext(c.names.error) : err;
  }
  // what it cost is the billed line's: counted there once
  await noteLine(c.ledger, { at: new Date().toISOString(), call: c.call, event: 'answered', stopReason: res.stopReason }, c.backlog);
  return res;
}

/** The lines a full disk kept out of the ledger, written in order; one written leaves the backlog at once, so a failure part way keeps the rest. */
export async function writeLedgerBacklog(ledger: string, backlog: Record<string, unknown>[]): Promise<void> {
  while (backlog.length) {
    await appendJsonl(ledger, backlog[0]!);
    backlog.shift();
  }
}

/** A ledger line; one a full disk keeps out waits in `backlog`. */
async function noteLine(ledger: string, line: Record<string, unknown>, backlog: Record<string, unknown>[]): Promise<void> {
  await appendJsonl(ledger, line).catch((err: unknown) => {
    if (!isDiskFull(err)) throw err;
    backlog.push(line);
  });
}
