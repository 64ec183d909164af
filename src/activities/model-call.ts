/**
 * The model call of a turn: the cost ledger around it, the replies refused and asked again, and
 * the conversation it is made of, as agent.ts keeps it.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { join } from 'node:path';
import { conversationTokens } from '../context/index.js';
import { ModelError, type BilledReply, type ModelClient, type ModelResult } from '../model/index.js';
import type { ToolDefinition } from '../tools/index.js';
import type { Usage } from '../shared/types.js';
import type { AgentTurnInput, AgentTurnResult } from '../shared/contracts.js';
import { spendTokens, type SettleRequest } from '../shared/budget-ledger.js';
import type { ActivityDeps } from './deps.js';
import { OverBudgetError, temporalLedger, worstCase, type Settling } from './budget.js';
import { estimateTokens } from '../shared/tokens.js';
import { isDiskFull } from './disk.js';
import { activityContext } from './heartbeat.js';
import { ledgeredCall, MODEL_LEDGER_FILE, type CallBudget } from './ledgered-call.js';
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
 * The model call of one turn, every call in the cost ledger (ledgered-call.ts). A reply the loop must not act on is refused here and the model asked again, a bounded
 * number of times; the turn's usage is the sum of all its calls.
 */
export async function askModel(
  deps: ActivityDeps,
  rec: RunRecord,
  convo: Conversation,
  start: Anthropic.MessageParam[],
  inp: AgentTurnInput,
  maxTokens: number,
  /** the built-in tools and the run's MCP tools */
  tools: readonly ToolDefinition[],
  /** called once the request has been handed to the model client */
  asking?: () => void,
  /** where this activity's settles wait (activities/budget.ts); absent: each is awaited where it is sent */
  settling?: Settling,
): Promise<Asked> {
  const ledger = join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE);
  const activityAttempt = activityContext()?.info.attempt ?? 1;
  let client: ModelClient;
  try {
    client = await deps.model(rec.input.model, rec.input.runId);
  } catch (err) {
    // no key, a broken script: said once, not retried for minutes while the CLI shows "planning"
    throw err instanceof ModelError ? err.withContext(`model turn ${inp.turn}`) : err;
  }
  // an assistant message with no content is refused by the API: never send one (older runs stored some)
  let messages = start.map((m) => (m.role === 'assistant' && Array.isArray(m.content) && !m.content.length ? { ...m, content: assistantContent([]) } : m));
  const usage: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let cost = 0;
  const ledgerBacklog: Record<string, unknown>[] = [];
  for (let refused = 0; ; refused++) {
    const res = await ledgeredCall(
      client,
      { system: convo.system, rules: convo.rules, tools, messages, maxTokens, temperature: rec.input.temperature },
      {
        ledger,
        // the same logical call (run, attempt, turn, repair) has the same key on every retry
        call: `${inp.runId}:${inp.attempt}:${inp.turn}${refused ? `:r${refused}` : ''}`,
        turn: inp.turn,
        start: { turn: inp.turn, activityAttempt, model: client.model, estimatedInputTokens: conversationTokens(messages) },
        names: { error: `model turn ${inp.turn}`, cancel: `turn ${inp.turn}` },
        backlog: ledgerBacklog,
        ...(asking ? { asking } : {}),
        ...(inp.ledger
          ? {
              budget: turnBudget(deps, inp, `${inp.runId}:${inp.attempt}:${inp.turn}${refused ? `:r${refused}` : ''}`, ledger, settling, {
                model: client.model,
                inputTokens: conversationTokens(messages) + estimateTokens(convo.system + convo.rules + JSON.stringify(tools)),
                maxTokens,
                spent: () => ({ usage: { ...usage }, costUsd: Math.round(cost * 1e6) / 1e6 }),
              }),
            }
          : {}),
      },
    );
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

interface CallCost {
  model: string;
  /** the request's input as estimated (the conversation, system prompt, rules and tools) */
  inputTokens: number;
  maxTokens: number;
  /** what the turn's earlier calls (replies refused) cost, carried by an over-budget stop */
  spent: () => { usage: Usage; costUsd: number };
}

/**
 * A coder's call in the budget ledger: its worst case taken from the activity's lease (or reserved
 * on its own where there is none), its bill settled, or let go unbilled.
 */
function turnBudget(deps: ActivityDeps, inp: AgentTurnInput, key: string, ledger: string, settling: Settling | undefined, cost: CallCost): CallBudget {
  const port = deps.ledger ?? temporalLedger();
  const ref = inp.ledger!;
  const need = worstCase(cost.model, cost.inputTokens, cost.maxTokens);
  let leased = false;
  return {
    async reserve() {
      const fromLease = await settling?.lease?.take(need);
      leased = fromLease?.ok === true;
      const answer = fromLease ?? (await port.reserve(ref, { key, runId: inp.runId, repo: inp.repo, ...parentOf(inp), ...need }));
      if (answer.ok) return;
      await appendJsonl(ledger, { at: new Date().toISOString(), call: key, event: 'over_budget', over: answer.over });
      const spent = cost.spent();
      throw new OverBudgetError(answer.over, spent.usage, spent.costUsd);
    },
    async settle(b) {
      if (leased) settling!.lease!.billed(need, { tokens: spendTokens(b.usage), usd: b.costUsd });
      const req = settleRequest(inp, key, b, leased ? { key: settling!.lease!.key, frees: need } : undefined);
      if (settling) settling.settle(req);
      else await port.settle(ref, req);
    },
    async release() {
      if (leased) settling!.lease!.giveBack(need);
      else await port.release(ref, key);
    },
  };
}

const parentOf = (inp: AgentTurnInput) => (inp.ledger?.parent ? { parent: inp.ledger.parent } : {});

/** A billed reply settles its call's reservation with what it really cost. */
export async function settleCall(deps: ActivityDeps, inp: AgentTurnInput, key: string, b: BilledReply): Promise<void> {
  if (!inp.ledger) return;
  await (deps.ledger ?? temporalLedger()).settle(inp.ledger, settleRequest(inp, key, b));
}

function settleRequest(inp: AgentTurnInput, key: string, b: BilledReply, lease?: SettleRequest['lease']): SettleRequest {
  return { key, runId: inp.runId, repo: inp.repo, ...parentOf(inp), message: b.message, usage: b.usage, usd: b.costUsd, ...(lease ? { lease } : {}) };
}
