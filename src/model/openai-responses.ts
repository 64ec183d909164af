/**
 * The OpenAI provider over the Responses API, for `openai:MODEL`: the conversation as input items
 * (function calls and their outputs by call_id), the streamed events put together as the Messages
 * API's reply. Nothing is stored at OpenAI (`store: false`): every turn sends the conversation, as
 * Kiln keeps it, like the other providers.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { OpenAIError } from 'openai';
import type { Usage } from '../shared/types.js';
import { argumentsOf, contentText, resultText, takesTemperature } from './openai-request.js';
import { toolCallBlocks, type ToolCall } from './openai-stream.js';
import type { ModelRequest } from './request.js';

type Block = Anthropic.ContentBlockParam;
type Item = OpenAI.Responses.ResponseInputItem;

function itemsOf(messages: Anthropic.MessageParam[]): Item[] {
  const out: Item[] = [];
  for (const m of messages) {
    const blocks: Block[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const b of blocks) {
      if (b.type === 'tool_use') out.push({ type: 'function_call', call_id: b.id, name: b.name, arguments: argumentsOf(b.input) });
      else if (b.type === 'tool_result') out.push({ type: 'function_call_output', call_id: b.tool_use_id, output: resultText(b) });
    }
    const text = contentText(blocks.filter((b) => b.type !== 'tool_use' && b.type !== 'tool_result'));
    if (text) out.push({ role: m.role === 'assistant' ? 'assistant' : 'user', content: text });
  }
  return out;
}

export type ResponsesParams = OpenAI.Responses.ResponseCreateParamsStreaming;

export function buildResponsesParams(model: string, req: ModelRequest): ResponsesParams {
  const instructions = [req.system, req.rules ?? ''].filter((t) => t.trim() !== '').join('\n\n');
  return {
    model,
    input: itemsOf(req.messages),
    stream: true,
    store: false,
    max_output_tokens: req.maxTokens,
    ...(instructions ? { instructions } : {}),
    ...(req.tools.length
      ? { tools: req.tools.map((t) => ({ type: 'function' as const, name: t.name, description: t.description, parameters: t.input_schema, strict: false })) }
      : {}),
    ...(req.forceTool ? { tool_choice: { type: 'function' as const, name: req.forceTool } } : {}),
    ...(req.temperature !== undefined && takesTemperature(model) ? { temperature: req.temperature } : {}),
  };
}

export interface ResponsesReply {
  id: string;
  model: string;
  content: Anthropic.ContentBlock[];
  stopReason: string;
  usage: Usage;
}

/** The few fields of the stream's events this reads; the SDK's union is wider than Kiln needs. */
interface Event {
  type: string;
  delta?: string;
  output_index?: number;
  item?: { type: string; call_id?: string; name?: string; arguments?: string };
  response?: {
    id: string;
    model: string;
    incomplete_details?: { reason?: string } | null;
    error?: { message?: string } | null;
    usage?: OpenAI.Responses.ResponseUsage | null;
  };
  message?: string;
}

function usageOf(u: OpenAI.Responses.ResponseUsage | null | undefined): Usage {
  const cached = u?.input_tokens_details?.cached_tokens ?? 0;
  return { input: Math.max(0, (u?.input_tokens ?? 0) - cached), output: u?.output_tokens ?? 0, cacheRead: cached, cacheWrite: 0 };
}

/**
 * The reply, once the stream said response.completed (or incomplete: cut by max_output_tokens).
 * `billed` hears of its usage before the reply is returned. A failed response or an error event is
 * an OpenAIError (the reply cannot be used); a stream that ends before either is one too.
 */
export async function responsesReplyOf(events: AsyncIterable<unknown>, billed?: (reply: ResponsesReply) => Promise<void>): Promise<ResponsesReply> {
  let text = '';
  const calls = new Map<number, ToolCall>();
  for await (const raw of events) {
    const e = raw as Event;
    if (e.type === 'response.output_text.delta') text += e.delta ?? '';
    else if (e.type === 'response.output_item.added' && e.item?.type === 'function_call')
      calls.set(e.output_index ?? calls.size, { id: e.item.call_id, name: e.item.name ?? '', args: e.item.arguments ?? '' });
    else if (e.type === 'response.function_call_arguments.delta') {
      const call = calls.get(e.output_index ?? -1);
      if (call) call.args += e.delta ?? '';
    } else if (e.type === 'response.failed' || e.type === 'error')
      throw new OpenAIError(`the model API failed the response: ${(e.response?.error?.message ?? e.message ?? 'no reason given').slice(0, 300)}`);
    else if ((e.type === 'response.completed' || e.type === 'response.incomplete') && e.response) {
      const content: Anthropic.ContentBlock[] = [...(text ? [{ type: 'text' as const, text, citations: null }] : []), ...toolCallBlocks([...calls.values()])];
      const cut = e.type === 'response.incomplete' && e.response.incomplete_details?.reason === 'max_output_tokens';
      const stopReason = cut ? 'max_tokens' : calls.size ? 'tool_use' : e.type === 'response.incomplete' ? 'refusal' : 'end_turn';
      const reply = { id: e.response.id, model: e.response.model, content, stopReason, usage: usageOf(e.response.usage) };
      await billed?.(reply);
      return reply;
    }
  }
  throw new OpenAIError("the model API's stream ended before its reply did");
}
