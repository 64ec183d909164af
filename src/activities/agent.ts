/**
 * agentTurn: one model call. The conversation lives on the worktree's host (not in workflow
 * history); the reply for turn N is stored once, so a retried turn returns it instead of paying
 * for it again, and the workflow only sees a bounded summary.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { join } from 'node:path';
import { compactConversation, conversationTokens, readProjectRules } from '../context/index.js';
import { estimateTokens } from '../shared/tokens.js';
import { createHash } from 'node:crypto';
import { initialUserMessage, systemPrompt } from '../context/prompt.js';
import { type BilledReply, type ModelResult } from '../model/index.js';
import { readFile } from 'node:fs/promises';
import { Context } from '@temporalio/activity';
import { redact, redactDeep } from '../redact/index.js';
import {
  REFLECTION_TOOLS,
  TOOL_NAMES,
  describeCall,
  describeMcpCall,
  mcpDefinitions,
  parseToolInput,
  toolDefinitions,
  type McpToolInfo,
} from '../tools/index.js';
import { MCP_PREFIX } from '../policy/mcp.js';
import { runMcpTools } from './mcp-catalog.js';
import { DEFAULT_CONTEXT_TOKENS } from '../shared/types.js';
import { checkpointDiff } from '../store/diff.js';
import { firstContext } from './first-context.js';
import { firstLook, knownWorktreeTree, lookAfterEditDone } from './snapshot.js';
import type { AgentTurnInput, Checkpoint, AgentTurnResult, RunToolInput, RunToolResult, ToolCallView } from '../shared/contracts.js';
import { runAhead, turnsAhead, turnsAheadMs } from './run-ahead.js';
import { OverBudgetError, Settling, temporalLedger } from './budget.js';
import { CallLease } from './budget-lease.js';
import type { ActivityDeps } from './deps.js';
import { diskFullFailure, isDiskFull } from './disk.js';
import { activityContext, heartbeating } from './heartbeat.js';
import { appendEvent, appendJsonl, loadRun, readJsonKept, runDir, stateDir, writeJsonKept, writeWorkflowEvents, type RunRecord } from '../store/run-files.js';
import { readySandbox } from './tool-command.js';
import { callPath, readStoredResult, type StoredCall } from './tool-results.js';
import { MAX_INPUT_ERROR_CHARS, askModel, settleCall, assistantContent, boundedJson, type Asked, type Conversation } from './model-call.js';
import { MODEL_LEDGER_FILE, writeLedgerBacklog } from './ledgered-call.js';

/** Fold older turns once the conversation passes this share of the model's window. */
export const COMPACT_AT = 0.6;
const TEXT_SUMMARY_MAX_CHARS = 500;

/** Replies kept in memory until saved; a handful of runs' turns at most. */
const MAX_UNSAVED = 64;

/** What a turn needs besides the outside world: the worker's unsaved replies and the tool runner. */
export interface AgentDeps extends ActivityDeps {
  /** replies paid for whose saving failed (a full disk), by run and turn: a retry uses one, never a new call */
  unsaved: Map<string, Asked>;
  /** the runTool the workflow schedules: a turn runs its calls ahead through it (run-ahead.ts) */
  runTool: (inp: RunToolInput) => Promise<RunToolResult>;
}

export async function agentTurn(deps: AgentDeps, inp: AgentTurnInput): Promise<AgentTurnResult> {
  const settling = new Settling(inp.ledger ? { port: deps.ledger ?? temporalLedger(), ref: inp.ledger } : undefined);
  if (inp.ledger) settling.lease = turnLease(deps, inp, settling);
  let first: AgentTurnResult;
  let more: AgentTurnResult[];
  try {
    first = await takeTurn(deps, inp, settling);
    more = await turnsAhead(inp, first, (next) => takeTurn(deps, next, settling), turnsAheadMs(deps.env));
  } catch (err) {
    settling.abandon();
    throw err;
  }
  // every reply of these turns is settled in the budget ledger before the workflow hears of them
  await settling.done();
  return more.length ? { ...first, more } : first;
}

/** The lease this activity's calls spend: one per activity attempt, so a retry never spends a dead attempt's. */
function turnLease(deps: AgentDeps, inp: AgentTurnInput, settling: Settling): CallLease {
  const info = activityContext()?.info;
  const port = deps.ledger ?? temporalLedger();
  const keyOf = (attempt: number) => `lease:${inp.runId}:${inp.attempt}:${info?.activityId ?? `turn-${inp.turn}`}:${attempt}`;
  // a dead attempt's lease would hold its worst cases until the run ends; its billed replies are settled again below
  for (let a = 1; a < (info?.attempt ?? 1); a++) settling.add(port.release(inp.ledger!, keyOf(a)));
  const owner = { runId: inp.runId, repo: inp.repo, ...(inp.ledger!.parent ? { parent: inp.ledger!.parent } : {}) };
  return new CallLease(port, inp.ledger!, keyOf(info?.attempt ?? 1), owner, settling);
}

/** One model call and the calls of its reply that are the worker's to run. */
async function takeTurn(deps: AgentDeps, inp: AgentTurnInput, settling: Settling): Promise<AgentTurnResult> {
  let turn: AgentTurnResult;
  try {
    // the whole turn heartbeats, not only the model call: with 50 runs on two cores (load
    // 20–78) runs ended blocked on "agentTurn failed: activity Heartbeat timeout" while their
    // worker was alive and busy outside the model call
    turn = await heartbeating(() => oneTurn(deps, inp, settling));
  } catch (err) {
    if (isDiskFull(err)) throw diskFullFailure(`model turn ${inp.turn}`, err);
    throw err;
  }
  // runTool heartbeats and turns its own faults into tool results, as it does on its own
  const ran = await runAhead(inp, turn, deps.runTool);
  return ran.length ? { ...turn, ran } : turn;
}

async function oneTurn(deps: AgentDeps, inp: AgentTurnInput, settling: Settling): Promise<AgentTurnResult> {
  const file = join(stateDir(inp.repo, inp.runId), 'conversation.json');
  // at once: each is a trip through the thread pool, and a fast turn is mostly such trips
  const [, rec, storedConvo] = await Promise.all([
    writeWorkflowEvents(inp.repo, inp.runId, inp.events),
    loadRun(inp.repo, inp.runId),
    readJsonKept<Conversation>(file),
  ]);
  const convo = storedConvo ?? (await startConversation(rec));
  const stored = convo.replies[String(inp.turn)];
  if (stored) {
    // its settles may not have reached the ledger before the worker that took it died
    if (inp.ledger) settling.add(settleAgain(deps, inp));
    return stored;
  }
  // off the model request's path: no tool runs while the model thinks, so the worktree the
  // checkpoint sees is the one the turn started from, and it is returned with the reply
  const pendingCheckpoint = inp.checkpoint ? takeCheckpoint(rec, inp.turn) : undefined;
  pendingCheckpoint?.catch(() => undefined);
  // the same holds for the run's first look (snapshot.ts), started once the request is on its
  // way so that its git does not slow the request down; a failed one is left to the command
  let pendingLook: Promise<void> | undefined;
  const asking = () => {
    if (!inp.checkpoint) pendingLook ??= firstLook(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId)).catch(() => undefined);
    // and the sandbox the turn's readers will run in, if the worktree has none yet
    readySandbox(rec, deps);
  };

  // the run's MCP tools follow the built-in ones: discovered on the first turn, the same on every later one
  const mcpTools = await runMcpTools(deps, rec);
  const tools = [...toolDefinitions(), ...mcpDefinitions(mcpTools)];
  const user = await nextUserMessage(rec, convo, inp);
  const { messages: kept, compacted } = await compactIfLong(rec, inp, [...convo.messages, user]);
  let messages = kept;
  // the budget is not overshot by a turn: the input must fit what is left, and the output gets the rest
  let maxTokens = rec.input.maxTokens;
  if (inp.tokensLeft !== undefined) {
    const input = conversationTokens(messages) + estimateTokens(convo.system + convo.rules + JSON.stringify(tools));
    if (input >= inp.tokensLeft) {
      const stop = `maxTokens (${rec.input.budgets.maxTokens}): turn ${inp.turn} would send ~${input} tokens with ${inp.tokensLeft} left`;
      await appendEvent(inp.repo, inp.runId, { type: 'budget', turn: inp.turn, stop });
      await pendingCheckpoint?.catch(() => undefined);
      await pendingLook;
      return { calls: [], text: '', stopReason: null, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, costUsd: 0, budgetStop: stop };
    }
    maxTokens = Math.max(1, Math.min(maxTokens, inp.tokensLeft - input));
  }
  deps.crash('model-turn', inp.turn);
  // a retry: a reply the last attempt was billed for may not have reached the ledger before its
  // worker died; settled before the call reserves again (a settle lets its call's hold go)
  if (inp.ledger && retried()) await settleAgain(deps, inp);
  const key = `${inp.runId}:${inp.turn}`;
  // A reply already paid for whose saving failed (a full disk): a retry uses it, never a new call.
  let asked: Asked;
  try {
    asked = deps.unsaved.get(key) ?? (await askModel(deps, rec, convo, messages, inp, maxTokens, tools, asking, settling));
  } catch (err) {
    // a retry of this turn takes the checkpoint again: this one must let go of its index first
    await pendingCheckpoint?.catch(() => undefined);
    await pendingLook;
    // not sent: the workflow parks the run until a person raises the limit, then takes the turn again
    if (err instanceof OverBudgetError) return { calls: [], text: '', stopReason: null, usage: err.usage, costUsd: err.costUsd, overBudget: err.over };
    throw err;
  }
  // kept before the checkpoint is awaited: it runs beside the call and can fail (a full disk)
  deps.unsaved.set(key, asked);
  if (deps.unsaved.size > MAX_UNSAVED) deps.unsaved.delete(deps.unsaved.keys().next().value!);
  await pendingLook;
  const checkpoint = await pendingCheckpoint;
  const { res, usage, costUsd } = asked;
  messages = asked.messages;

  // what the model said is stored, shown and re-sent on every later turn: redacted first
  // (thinking blocks excepted: their signature binds their text, so they stay as the API sent them)
  const content = res.content.map((b) => (b.type === 'thinking' || b.type === 'redacted_thinking' ? b : redactDeep(b)));
  const { calls, texts } = await recordCalls(inp, content, mcpTools);
  const result: AgentTurnResult = {
    calls,
    ...(checkpoint ? { checkpoint } : {}),
    ...(compacted ? { compacted } : {}),
    text: redact(texts.join('\n')).slice(0, TEXT_SUMMARY_MAX_CHARS),
    stopReason: res.stopReason,
    usage,
    costUsd,
  };
  // a new object: the one read is shared with the next turn (readJsonKept) and frozen
  const next: Conversation = {
    ...convo,
    messages: [...messages, { role: 'assistant', content: assistantContent(content as Anthropic.ContentBlock[]) }],
    replies: { ...convo.replies, [String(inp.turn)]: result },
  };
  // the cost ledger first: once the conversation holds the reply, a retry never comes back here
  await writeLedgerBacklog(join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE), asked.ledgerBacklog);
  // compact, not pretty-printed: it is rewritten every turn and grows with the conversation
  await writeJsonKept(file, next);
  deps.unsaved.delete(key);
  // the reply is stored: what follows are the record's copies, written side by side
  await Promise.all([recordTurnMetrics(inp, result), turnEvent(inp, result, calls, asked)]);
  return result;
}

function turnEvent(inp: AgentTurnInput, result: AgentTurnResult, calls: ToolCallView[], asked: Asked): Promise<void> {
  const { res, usage, costUsd } = asked;
  return appendEvent(inp.repo, inp.runId, {
    type: 'turn',
    turn: inp.turn,
    attempt: inp.attempt,
    stopReason: res.stopReason,
    calls: calls.map((c) => c.summary),
    text: result.text,
    usage,
    costUsd,
    scripted: asked.scripted,
  });
}

/** Older turns folded once the conversation passes COMPACT_AT of the model's window. */
async function compactIfLong(
  rec: RunRecord,
  inp: AgentTurnInput,
  messages: Anthropic.MessageParam[],
): Promise<{ messages: Anthropic.MessageParam[]; compacted: AgentTurnResult['compacted'] }> {
  const before = conversationTokens(messages);
  if (before <= (rec.input.contextTokens ?? DEFAULT_CONTEXT_TOKENS) * COMPACT_AT) return { messages, compacted: undefined };
  const folded = compactConversation(messages, {
    goal: rec.input.goal,
    plan: inp.memory?.plan ?? [],
    touchedFiles: inp.memory?.touchedFiles ?? [],
    failures: inp.memory?.failures ?? [],
  });
  if (!folded) return { messages, compacted: undefined };
  const compacted = { removedMessages: folded.removed, beforeTokens: before, afterTokens: conversationTokens(folded.messages) };
  await appendEvent(inp.repo, inp.runId, { type: 'compaction', turn: inp.turn, ...compacted });
  return { messages: folded.messages, compacted };
}

/** The reply's tool calls, each stored for runTool, as the workflow sees them; and its text blocks. */
async function recordCalls(
  inp: AgentTurnInput,
  content: Anthropic.ContentBlock[] | ModelResult['content'],
  mcpTools: readonly McpToolInfo[],
): Promise<{ calls: ToolCallView[]; texts: string[] }> {
  const calls: ToolCallView[] = [];
  const texts: string[] = [];
  for (const block of content) {
    if (block.type === 'text') texts.push(block.text);
    if (block.type !== 'tool_use') continue;
    const call: StoredCall = { id: block.id, name: block.name, input: block.input };
    // kept: runTool reads it next, in this process as a rule (a stat instead of a read and a parse)
    await writeJsonKept(callPath(inp.repo, inp.runId, block.id), call, { pretty: true });
    const parsed = parseCall(block.name, block.input, mcpTools);
    const fingerprint = createHash('sha256')
      .update(`${block.name}\0${JSON.stringify(block.input)}`)
      .digest('hex')
      .slice(0, 16);
    calls.push(
      parsed.ok
        ? { id: block.id, name: block.name, fingerprint, summary: redact(parsed.summary).slice(0, 200) }
        : {
            id: block.id,
            name: block.name,
            fingerprint,
            summary: `${block.name.slice(0, 40)} (invalid)`,
            inputError: redact(parsed.error).slice(0, MAX_INPUT_ERROR_CHARS),
          },
    );
    if (!parsed.ok && REFLECTION_TOOLS.has(block.name)) {
      // the decision log keeps every reflection, the rejected ones too
      await appendJsonl(join(runDir(inp.repo, inp.runId), 'decisions.jsonl'), {
        at: new Date().toISOString(),
        type: 'reflection',
        valid: false,
        turn: inp.turn,
        error: parsed.error.slice(0, MAX_INPUT_ERROR_CHARS),
        input: boundedJson(block.input),
      });
    }
  }
  return { calls, texts };
}

/**
 * A call as the workflow sees it: a built-in tool's parsed by its schema; an MCP tool's needs only
 * to name one of the run's MCP tools with an object for input (its server checks the rest, and the
 * policy judges it by its arguments).
 */
function parseCall(name: string, input: unknown, mcpTools: readonly McpToolInfo[]): { ok: true; summary: string } | { ok: false; error: string } {
  if (name.startsWith(MCP_PREFIX)) {
    if (!mcpTools.some((t) => t.name === name)) {
      const known = mcpTools.map((t) => t.name).join(', ') || 'none in this run';
      return { ok: false, error: `Unknown tool "${name}". MCP tools: ${known}; built-in tools: ${TOOL_NAMES.join(', ')}.` };
    }
    if (!input || typeof input !== 'object' || Array.isArray(input)) return { ok: false, error: `${name} needs its arguments as one JSON object.` };
    return { ok: true, summary: describeMcpCall(name, input) };
  }
  const parsed = parseToolInput(name, input);
  return parsed.ok ? { ok: true, summary: describeCall(parsed) } : parsed;
}

/** Bigger checkpoints are not carried in history; a host loss then rebuilds from the base. */
export const MAX_CHECKPOINT_BYTES = 256 * 1024;

async function takeCheckpoint(rec: RunRecord, turn: number): Promise<Checkpoint> {
  const state = stateDir(rec.input.repo, rec.input.runId);
  // an edit's look may still be going: its tree spares the checkpoint a look of its own
  await lookAfterEditDone(state);
  const { patch } = await checkpointDiff(rec.worktree, rec.baseCommit, state, await knownWorktreeTree(state));
  const bytes = Buffer.byteLength(patch);
  if (bytes > MAX_CHECKPOINT_BYTES) return { turn, tooLarge: bytes };
  return { turn, patch, files: [...patch.matchAll(/^diff --git a\/(.+?) b\//gm)].map((m) => m[1]!) };
}

async function startConversation(rec: RunRecord): Promise<Conversation> {
  const rules = redact(await readProjectRules(rec.worktree));
  return {
    system: systemPrompt({ checks: rec.checks, allowTestEdits: rec.input.allowTestEdits }),
    rules,
    messages: [],
    replies: {},
  };
}

/**
 * The user side of turn N: the first turn gets the goal and packed context; later turns answer
 * every tool_use of the previous reply (the API requires it), from the journal or the workflow.
 */
async function nextUserMessage(rec: RunRecord, convo: Conversation, inp: AgentTurnInput): Promise<Anthropic.MessageParam> {
  const blocks: Anthropic.ContentBlockParam[] = [];
  const last = convo.messages[convo.messages.length - 1];
  if (!last) {
    const ctx = await firstContext(rec);
    blocks.push({ type: 'text', text: redact(initialUserMessage(rec.input.goal, ctx.text)) });
  } else if (last.role === 'assistant' && Array.isArray(last.content)) {
    for (const b of last.content) {
      if (b.type !== 'tool_use') continue;
      const fromWorkflow = inp.toolResults?.[b.id];
      const stored = await readStoredResult(inp.repo, inp.runId, b.id);
      const r = fromWorkflow ?? (stored ? { content: stored.content, isError: stored.isError } : undefined);
      blocks.push({
        type: 'tool_result',
        tool_use_id: b.id,
        content: redact(r?.content ?? 'This call was not run: the attempt ended before it.'),
        is_error: r ? r.isError : true,
      });
    }
  }
  if (inp.userText) blocks.push({ type: 'text', text: redact(inp.userText) });
  if (!blocks.length) blocks.push({ type: 'text', text: 'Continue. Use the tools; call finish when the checks pass.' });
  return { role: 'user', content: blocks };
}

async function recordTurnMetrics(inp: AgentTurnInput, r: AgentTurnResult): Promise<void> {
  const file = join(stateDir(inp.repo, inp.runId), 'turn-metrics.json');
  const all = (await readJsonKept<Array<Record<string, unknown>>>(file)) ?? [];
  if (all.some((t) => t.turn === inp.turn)) return;
  const next = [...all, { turn: inp.turn, attempt: inp.attempt, ...r.usage, costUsd: r.costUsd }];
  await writeJsonKept(file, next, { pretty: true });
}

/** The replies a stored turn was billed for, from the run's cost ledger, settled again (each message counts once). */
async function settleAgain(deps: AgentDeps, inp: AgentTurnInput): Promise<void> {
  const text = await readFile(join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE), 'utf8').catch(() => '');
  const call = `${inp.runId}:${inp.attempt}:${inp.turn}`;
  for (const line of text.split('\n')) {
    if (!line.includes('"billed"')) continue;
    let l: { event?: string; call?: string } & Partial<BilledReply>;
    try {
      l = JSON.parse(line) as typeof l;
    } catch {
      // a line its worker was killed in the middle of writing
      continue;
    }
    if (l.event !== 'billed' || !(l.call === call || l.call?.startsWith(`${call}:r`)) || !l.message || !l.usage) continue;
    await settleCall(deps, inp, l.call, { message: l.message, usage: l.usage, costUsd: l.costUsd ?? 0 });
  }
}

function retried(): boolean {
  try {
    return Context.current().info.attempt > 1;
  } catch {
    return false;
  }
}
