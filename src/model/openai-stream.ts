/**
 * A streamed Chat Completions reply put together as the Messages API's reply, so the rest of Kiln
 * reads one shape. Servers that copy the API differ in how they send tool calls; each quirk here
 * ends as a call the turn can answer with an error the model reads, never a crash or a lost call:
 * arguments that are not JSON (kept raw under UNPARSED_INPUT, as stream-reply.ts does), arguments
 * sent as an object, parallel calls all at index 0, a call with no id (one is made up) or no name.
 */
import { randomBytes } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { OpenAIError } from 'openai';
import type { Usage } from '../shared/types.js';
import { toolInput } from './stream-reply.js';

type Chunk = OpenAI.Chat.ChatCompletionChunk;
type ToolDelta = OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall;

/** The name a call without one is given: the tool layer answers it as an unknown tool, naming the tools there are. */
export const UNNAMED_TOOL = 'unnamed_tool';

/** A tool call as a stream sent it, whole once the stream has ended. */
export interface ToolCall {
  id: string | undefined;
  name: string;
  args: string;
}
type Call = ToolCall;

export interface ChatReply {
  id: string;
  model: string;
  content: Anthropic.ContentBlock[];
  stopReason: string | null;
  /** undefined when the server never said it (a server that ignores stream_options) */
  usage: Usage | undefined;
}

/** Chat Completions' finish reasons as the Messages API's stop reasons, which the loop reads. */
function stopReasonOf(finish: string | null, calls: number): string | null {
  if (finish === 'length') return 'max_tokens';
  if (finish === 'content_filter') return 'refusal';
  // some servers end a reply with calls in it as 'stop'
  if (calls > 0 || finish === 'tool_calls' || finish === 'function_call') return 'tool_use';
  return finish === null ? null : 'end_turn';
}

/** OpenAI counts cached prompt tokens inside prompt_tokens; Kiln's ledger keeps them apart. */
export function usageOfChat(u: OpenAI.CompletionUsage): Usage {
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  return { input: Math.max(0, u.prompt_tokens - cached), output: u.completion_tokens, cacheRead: cached, cacheWrite: 0 };
}

/** `open` maps an index to the call last opened there: a server may reuse an index for the next parallel call. */
function applyToolDelta(calls: Call[], open: Map<number, Call>, d: ToolDelta): void {
  const at = typeof d.index === 'number' ? d.index : -1;
  let call = open.get(at) ?? (at === -1 ? calls.at(-1) : undefined);
  // a new id where a call is open: the next parallel call, sent at the same index
  if (!call || (d.id && call.id && d.id !== call.id)) {
    call = { id: d.id ?? undefined, name: '', args: '' };
    calls.push(call);
    open.set(at, call);
  }
  if (d.id && !call.id) call.id = d.id;
  if (d.function?.name) call.name += d.function.name;
  const args: unknown = d.function?.arguments;
  if (typeof args === 'string') call.args += args;
  else if (args !== undefined && args !== null) call.args = JSON.stringify(args);
}

/** The calls as tool_use blocks: one with no id gets one made up, one with no name UNNAMED_TOOL, arguments that are not JSON stay raw. */
export function toolCallBlocks(calls: ToolCall[]): Anthropic.ContentBlock[] {
  return calls.map(
    (call) =>
      ({
        type: 'tool_use',
        id: call.id || `call_kiln_${randomBytes(6).toString('hex')}`,
        name: call.name || UNNAMED_TOOL,
        input: toolInput(call.args),
      }) as Anthropic.ToolUseBlock,
  );
}

function blocksOf(text: string, calls: Call[]): Anthropic.ContentBlock[] {
  return [...(text ? [{ type: 'text' as const, text, citations: null }] : []), ...toolCallBlocks(calls)];
}

/**
 * The reply, once the stream said how it finished and what it used. `billed` hears of the usage as
 * soon as it comes, before the rest is read. A stream that ends before a finish reason is not a
 * reply: it throws, and the call is retried.
 */
export async function chatReplyOf(chunks: AsyncIterable<Chunk>, billed?: (reply: ChatReply) => Promise<void>): Promise<ChatReply> {
  const calls: Call[] = [];
  const open = new Map<number, Call>();
  let text = '';
  let finish: string | null = null;
  let usage: Usage | undefined;
  let id = '';
  let model = '';
  for await (const chunk of chunks) {
    id ||= chunk.id ?? '';
    model ||= chunk.model ?? '';
    if (chunk.usage) usage = usageOfChat(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== undefined && choice.index !== 0) continue;
      if (typeof choice.delta?.content === 'string') text += choice.delta.content;
      for (const d of choice.delta?.tool_calls ?? []) applyToolDelta(calls, open, d);
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    // the usage chunk comes last: the reply is whole, whether or not [DONE] follows
    if (finish && usage) break;
  }
  if (!finish) throw new OpenAIError("the model API's stream ended before its reply did");
  const reply: ChatReply = { id, model, content: blocksOf(text, calls), stopReason: stopReasonOf(finish, calls.length), usage };
  await billed?.(reply);
  return reply;
}
