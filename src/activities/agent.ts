/**
 * agentTurn: one model call. The conversation lives on the worktree's host (not in workflow
 * history); the reply for turn N is stored once, so a retried turn returns it instead of paying
 * for it again, and the workflow only sees a bounded summary.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import { join } from 'node:path';
import { buildContext, compactConversation, conversationTokens, readProjectRules } from '../context/index.js';
import { createHash } from 'node:crypto';
import { initialUserMessage, systemPrompt } from '../context/prompt.js';
import { ModelError } from '../model/index.js';
import { redact } from '../redact/index.js';
import { describeCall, parseToolInput, toolDefinitions } from '../tools/index.js';
import { DEFAULT_CONTEXT_TOKENS } from '../shared/types.js';
import { checkpointDiff } from './workspace.js';
import type { AgentTurnInput, Checkpoint, AgentTurnResult, ToolCallView } from './contracts.js';
import type { ActivityDeps } from './deps.js';
import { heartbeating } from './heartbeat.js';
import { appendEvent, appendJsonl, loadRun, readJson, runDir, stateDir, writeJsonAtomic, writeTextAtomic, writeWorkflowEvents, type RunRecord } from './run-files.js';
import { callPath, resultPath, type StoredCall, type StoredResult } from './tools.js';

/** Context packed into the first message: enough to start, small enough to stay cheap. */
export const CONTEXT_TOKEN_BUDGET = 6000;
/** Fold older turns once the conversation passes this share of the model's window. */
export const COMPACT_AT = 0.6;
const TEXT_SUMMARY_MAX_CHARS = 500;

interface Conversation {
  system: string;
  rules: string;
  messages: Anthropic.MessageParam[];
  /** turn → the result handed to the workflow (a retried turn returns it as is) */
  replies: Record<string, AgentTurnResult>;
}

export function agentActivities(deps: ActivityDeps) {
  async function agentTurn(inp: AgentTurnInput): Promise<AgentTurnResult> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    const rec = await loadRun(inp.repo, inp.runId);
    const file = join(stateDir(inp.repo, inp.runId), 'conversation.json');
    const convo = (await readJson<Conversation>(file)) ?? (await startConversation(rec));
    const stored = convo.replies[String(inp.turn)];
    if (stored) return stored;
    // off the model request's path: no tool runs while the model thinks, so the worktree the
    // checkpoint sees is the one the turn started from, and it is returned with the reply
    const pendingCheckpoint = inp.checkpoint ? takeCheckpoint(rec, inp.turn) : undefined;
    pendingCheckpoint?.catch(() => undefined);

    const user = await nextUserMessage(rec, convo, inp);
    let messages = [...convo.messages, user];
    let compacted: AgentTurnResult['compacted'];
    const before = conversationTokens(messages);
    if (before > (rec.input.contextTokens ?? DEFAULT_CONTEXT_TOKENS) * COMPACT_AT) {
      const folded = compactConversation(messages, {
        goal: rec.input.goal,
        plan: inp.memory?.plan ?? [],
        touchedFiles: inp.memory?.touchedFiles ?? [],
        failures: inp.memory?.failures ?? [],
      });
      if (folded) {
        messages = folded.messages;
        compacted = { removedMessages: folded.removed, beforeTokens: before, afterTokens: conversationTokens(messages) };
        await appendEvent(inp.repo, inp.runId, { type: 'compaction', turn: inp.turn, ...compacted });
      }
    }
    deps.crash('model-turn', inp.turn);
    const client = await deps.model(rec.input.model, rec.input.runId);
    let res;
    try {
      res = await heartbeating(() =>
        client.create(
          {
            system: convo.system,
            rules: convo.rules,
            tools: toolDefinitions(),
            messages,
            maxTokens: rec.input.maxTokens,
            temperature: rec.input.temperature,
          },
          { signal: Context.current().cancellationSignal, turn: inp.turn },
        ),
      );
    } catch (err) {
      // a retry of this turn takes the checkpoint again: this one must let go of its index first
      await pendingCheckpoint?.catch(() => undefined);
      throw err instanceof ModelError ? err.withContext(`model turn ${inp.turn}`) : err;
    }

    const checkpoint = await pendingCheckpoint;

    const calls: ToolCallView[] = [];
    const texts: string[] = [];
    for (const block of res.content) {
      if (block.type === 'text') texts.push(block.text);
      if (block.type !== 'tool_use') continue;
      const call: StoredCall = { id: block.id, name: block.name, input: block.input };
      await writeJsonAtomic(callPath(inp.repo, inp.runId, block.id), call);
      const parsed = parseToolInput(block.name, block.input);
      const fingerprint = createHash('sha256').update(`${block.name}\0${JSON.stringify(block.input)}`).digest('hex').slice(0, 16);
      calls.push(
        parsed.ok
          ? { id: block.id, name: block.name, fingerprint, summary: redact(describeCall(parsed)).slice(0, 200) }
          : { id: block.id, name: block.name, fingerprint, summary: `${block.name.slice(0, 40)} (invalid)`, inputError: redact(parsed.error) },
      );
      if (!parsed.ok && block.name === 'reflect') {
        // the decision log keeps every reflection, the rejected ones too
        await appendJsonl(join(runDir(inp.repo, inp.runId), 'decisions.jsonl'), {
          at: new Date().toISOString(), type: 'reflection', valid: false, turn: inp.turn, error: parsed.error, input: block.input,
        });
      }
    }
    const result: AgentTurnResult = {
      calls,
      ...(checkpoint ? { checkpoint } : {}),
      ...(compacted ? { compacted } : {}),
      text: redact(texts.join('\n')).slice(0, TEXT_SUMMARY_MAX_CHARS),
      stopReason: res.stopReason,
      usage: res.usage,
      costUsd: res.costUsd,
    };
    convo.messages = [...messages, { role: 'assistant', content: res.content as Anthropic.ContentBlockParam[] }];
    convo.replies[String(inp.turn)] = result;
    // compact, not pretty-printed: it is rewritten every turn and grows with the conversation
    await writeTextAtomic(file, JSON.stringify(convo));
    await recordTurnMetrics(inp, result);
    await appendEvent(inp.repo, inp.runId, {
      type: 'turn',
      turn: inp.turn,
      attempt: inp.attempt,
      stopReason: res.stopReason,
      calls: calls.map((c) => c.summary),
      text: result.text,
      usage: res.usage,
      costUsd: res.costUsd,
      scripted: client.scripted,
    });
    return result;
  }

  return { agentTurn };
}

/** Bigger checkpoints are not carried in history; a host loss then rebuilds from the base. */
export const MAX_CHECKPOINT_BYTES = 256 * 1024;

async function takeCheckpoint(rec: RunRecord, turn: number): Promise<Checkpoint> {
  const { patch } = await checkpointDiff(rec.worktree, rec.baseCommit, stateDir(rec.input.repo, rec.input.runId));
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
    const ctx = await buildContext({ workspace: rec.worktree, goal: rec.input.goal, maxTokens: CONTEXT_TOKEN_BUDGET, includeRules: false });
    blocks.push({ type: 'text', text: redact(initialUserMessage(rec.input.goal, ctx.text)) });
  } else if (last.role === 'assistant' && Array.isArray(last.content)) {
    for (const b of last.content) {
      if (b.type !== 'tool_use') continue;
      const fromWorkflow = inp.toolResults?.[b.id];
      const stored = await readJson<StoredResult>(resultPath(inp.repo, inp.runId, b.id));
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
  const all = (await readJson<Array<Record<string, unknown>>>(file)) ?? [];
  if (all.some((t) => t.turn === inp.turn)) return;
  all.push({ turn: inp.turn, attempt: inp.attempt, ...r.usage, costUsd: r.costUsd });
  await writeJsonAtomic(file, all);
}
