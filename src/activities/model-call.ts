/**
 * The model call of a turn: the cost ledger around it, the replies refused and asked again, and
 * the conversation it is made of, as agent.ts keeps it.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { join } from 'node:path';
import { conversationTokens } from '../context/index.js';
import { ModelError, type BilledReply, type ModelClient, type ModelResult } from '../model/index.js';
import { toolDefinitions } from '../tools/index.js';
import type { Usage } from '../shared/types.js';
import type { AgentTurnInput, AgentTurnResult } from '../shared/contracts.js';
import type { ActivityDeps } from './deps.js';
import { OverBudgetError, temporalLedger, worstCase, type Settling } from './budget.js';
import type { OverBudget } from '../shared/budget-ledger.js';
import { estimateTokens } from '../shared/tokens.js';
import { isDiskFull } from './disk.js';
import { heartbeating } from './heartbeat.js';
import { appendEvent, appendJsonl, runDir, type RunRecord } from '../store/run-files.js';

/** A tool input's error goes to the model and to history: a 5 MB path must not make a 5 MB error. */
export const MAX_INPUT_ERROR_CHARS = 2000;
/** Replies refused in a row (duplicate ids, a call cut by max_tokens) before the turn fails for good. */
export const MAX_REFUSED_REPLIES = 2;

export interface Conversation {
  system: string;
  rules: string;
  messages: Anthropic.MessageParam[];
  /** turn → the result handed to the workflow (a retried turn returns it as is) */
  replies: Record<string, AgentTurnResult>;
}

/** Model errors are KilnErrors, classified at the activity boundary (activities/failure.ts); this adds the turn. */
function inTurn(err: unknown, turn: number): unknown {
  return err instanceof ModelError ? err.withContext(`model turn ${turn}`) : err;
}

export interface Asked {
  res: ModelResult;
  /** the request's messages plus any refused replies and Kiln's answers to them */
  messages: Anthropic.MessageParam[];
  usage: Usage;
  costUsd: number;
  scripted: boolean;
  /** ledger lines a full disk kept out of model-calls.jsonl: written once the turn is saved */
  ledgerBacklog: Record<string, unknown>[];
}

/**
 * The model call of one turn, every call in the cost ledger (model-calls.jsonl): a line before
 * the call, so a call whose worker died still counts, one when the API has billed it, and one
 * after it. A reply the loop must not act on is refused here and the model asked again, a bounded
 * number of times; the turn's usage is the sum of all its calls.
 */
export async function askModel(
  deps: ActivityDeps,
  rec: RunRecord,
  convo: Conversation,
  start: Anthropic.MessageParam[],
  inp: AgentTurnInput,
  maxTokens: number,
  /** called once the request has been handed to the model client */
  asking?: () => void,
  /** where this activity's settles wait (activities/budget.ts); absent: each is awaited where it is sent */
  settling?: Settling,
): Promise<Asked> {
  const ledger = join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE);
  const activityAttempt = activityInfo()?.attempt ?? 1;
  let client: ModelClient;
  try {
    client = await deps.model(rec.input.model, rec.input.runId);
  } catch (err) {
    // no key, a broken script: said once, not retried for minutes while the CLI shows "planning"
    throw inTurn(err, inp.turn);
  }
  // an assistant message with no content is refused by the API: never send one (older runs stored some)
  let messages = start.map((m) => (m.role === 'assistant' && Array.isArray(m.content) && !m.content.length ? { ...m, content: assistantContent([]) } : m));
  const usage: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let cost = 0;
  // a reply is paid for the moment it arrives: a full disk while noting it must not lose it (the
  // retry would call the model again), so the line waits in memory until the turn is saved
  const ledgerBacklog: Record<string, unknown>[] = [];
  for (let refused = 0; ; refused++) {
    // the same logical call (run, attempt, turn, repair) has the same key on every retry
    const idempotencyKey = `${inp.runId}:${inp.attempt}:${inp.turn}${refused ? `:r${refused}` : ''}`;
    await appendJsonl(ledger, {
      at: new Date().toISOString(),
      call: idempotencyKey,
      event: 'start',
      turn: inp.turn,
      activityAttempt,
      model: client.model,
      estimatedInputTokens: conversationTokens(messages),
    });
    // durable the moment the stream says what the reply cost: a reply that cannot be read, or
    // whose worker dies before the turn is saved, was billed all the same
    const held = await reserveCall(deps, inp, client.model, idempotencyKey, convo, messages, maxTokens);
    if (held) {
      await appendJsonl(ledger, { at: new Date().toISOString(), call: idempotencyKey, event: 'over_budget', over: held });
      throw new OverBudgetError(held, usage, Math.round(cost * 1e6) / 1e6);
    }
    let billed = false;
    const onBilled = async (b: BilledReply) => {
      billed = true;
      await noteLine(ledger, { at: new Date().toISOString(), call: idempotencyKey, event: 'billed', ...b }, ledgerBacklog);
      const settled = settleCall(deps, inp, idempotencyKey, b);
      if (settling) settling.add(settled);
      else await settled;
    };
    let res: ModelResult;
    try {
      res = await heartbeating(() => {
        const call = client.create(
          { system: convo.system, rules: convo.rules, tools: toolDefinitions(), messages, maxTokens, temperature: rec.input.temperature },
          { signal: cancellationSignal(), turn: inp.turn, idempotencyKey, onBilled },
        );
        asking?.();
        return call;
      });
    } catch (err) {
      await appendJsonl(ledger, {
        at: new Date().toISOString(),
        call: idempotencyKey,
        event: 'failed',
        error: String((err as Error)?.message ?? err).slice(0, 300),
      }).catch(() => undefined);
      // unbilled, it holds nothing any more; a failed release is let go when the run ends
      if (!billed) await releaseCall(deps, inp, idempotencyKey).catch(() => undefined);
      // the SDK's abort error is the cancel the workflow asked for: said as one, it is not a failure of the turn
      if (cancellationSignal()?.aborted) throw new CancelledFailure(`turn ${inp.turn}: the model call was cancelled`);
      throw inTurn(err, inp.turn);
    }
    // what it cost is the billed line's: counted there once
    await noteLine(ledger, { at: new Date().toISOString(), call: idempotencyKey, event: 'answered', stopReason: res.stopReason }, ledgerBacklog);
    usage.input += res.usage.input;
    usage.output += res.usage.output;
    usage.cacheRead += res.usage.cacheRead;
    usage.cacheWrite += res.usage.cacheWrite;
    cost += res.costUsd;
    const problem = refusal(res);
    if (!problem) return { res, messages, usage, costUsd: Math.round(cost * 1e6) / 1e6, scripted: client.scripted, ledgerBacklog };
    await appendEvent(inp.repo, inp.runId, { type: 'refused_reply', turn: inp.turn, problem }).catch((err: unknown) => {
      if (!isDiskFull(err)) throw err;
    });
    if (refused >= MAX_REFUSED_REPLIES) {
      throw ApplicationFailure.create({
        type: 'ModelFatalError',
        message: `model turn ${inp.turn}: the model sent ${refused + 1} replies in a row that Kiln refused; the last: ${problem}`,
        nonRetryable: true,
      });
    }
    const said = res.content.filter((b): b is Anthropic.TextBlock => b.type === 'text' && b.text.trim() !== '');
    messages = [
      ...messages,
      { role: 'assistant', content: said.length ? said.map((b) => ({ type: 'text' as const, text: b.text })) : [{ type: 'text', text: '(reply refused)' }] },
      { role: 'user', content: [{ type: 'text', text: problem }] },
    ];
  }
}

/**
 * The cost ledger (an artifact of the run): one line per model call started, answered or failed,
 * and one `billed` line per reply the API billed, with its usage and cost, written as soon as the
 * stream said them. The run's spend is the sum of the billed lines, each message id once (an API
 * that honours idempotency keys serves a retried call's reply again under the same id).
 */
export const MODEL_LEDGER_FILE = 'model-calls.jsonl';

/** The fixed part of every request (the tool definitions), in tokens: estimated once. */
let toolTokens: number | undefined;

/** Reserves the call's worst case in the run's budget ledger; what it does not fit, or undefined when held (or the run has no ledger). */
async function reserveCall(
  deps: ActivityDeps,
  inp: AgentTurnInput,
  model: string,
  key: string,
  convo: Conversation,
  messages: Anthropic.MessageParam[],
  maxTokens: number,
): Promise<OverBudget | undefined> {
  const ref = inp.ledger;
  if (!ref) return undefined;
  toolTokens ??= estimateTokens(JSON.stringify(toolDefinitions()));
  const need = worstCase(model, conversationTokens(messages) + estimateTokens(convo.system + convo.rules) + toolTokens, maxTokens);
  const answer = await (deps.ledger ?? temporalLedger()).reserve(ref, {
    key,
    runId: inp.runId,
    repo: inp.repo,
    ...(ref.parent ? { parent: ref.parent } : {}),
    ...need,
  });
  return answer.ok ? undefined : answer.over;
}

/** A billed reply settles its call's reservation with what it really cost. */
export async function settleCall(deps: ActivityDeps, inp: AgentTurnInput, key: string, b: BilledReply): Promise<void> {
  const ref = inp.ledger;
  if (!ref) return;
  const parent = ref.parent ? { parent: ref.parent } : {};
  await (deps.ledger ?? temporalLedger()).settle(ref, { key, runId: inp.runId, repo: inp.repo, ...parent, message: b.message, usage: b.usage, usd: b.costUsd });
}

async function releaseCall(deps: ActivityDeps, inp: AgentTurnInput, key: string): Promise<void> {
  if (inp.ledger) await (deps.ledger ?? temporalLedger()).release(inp.ledger, key);
}

/** A ledger line; one a full disk keeps out waits in `backlog` until the turn is saved. */
async function noteLine(ledger: string, line: Record<string, unknown>, backlog: Record<string, unknown>[]): Promise<void> {
  await appendJsonl(ledger, line).catch((err: unknown) => {
    if (!isDiskFull(err)) throw err;
    backlog.push(line);
  });
}

/**
 * Why a reply must not be acted on, said to the model; undefined when it may. Duplicate tool_use
 * ids make results ambiguous (one call's would overwrite the other's); a call cut by max_tokens
 * may be schema-valid and still truncated (a file missing its end).
 */
export function refusal(res: Pick<ModelResult, 'content' | 'stopReason'>): string | undefined {
  const calls = res.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  const ids = calls.map((c) => c.id);
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup !== undefined)
    return `Kiln refused your last reply: two tool calls shared the id ${JSON.stringify(dup.slice(0, 80))}, so none of its calls was run. Send the calls again.`;
  if (res.stopReason === 'max_tokens' && calls.length)
    return `Your last reply was cut off by the output token limit in the middle of a tool call (${calls.map((c) => c.name.slice(0, 40)).join(', ')}), so none of its calls was run: a cut call may be incomplete. Continue: send the calls again, smaller (split a large file into several edits).`;
  return undefined;
}

/** The API refuses an assistant message with no content: an empty reply is stored as a note. */
export function assistantContent(content: Anthropic.ContentBlock[]): Anthropic.ContentBlockParam[] {
  return content.length ? (content as Anthropic.ContentBlockParam[]) : [{ type: 'text', text: '(empty reply)' }];
}

export function boundedJson(value: unknown): unknown {
  const text = JSON.stringify(value) ?? '';
  return text.length <= MAX_INPUT_ERROR_CHARS ? value : `${text.slice(0, MAX_INPUT_ERROR_CHARS)}… [${text.length} characters]`;
}

function activityInfo(): { attempt: number } | undefined {
  try {
    return Context.current().info;
  } catch {
    return undefined;
  }
}

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}
