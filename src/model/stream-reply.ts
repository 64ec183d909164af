/**
 * A streamed Messages reply put together from its events. The SDK's own accumulator parses each
 * tool call's input as it closes and throws on input that is not JSON, which loses the whole
 * reply: Kiln could only ask again for the same paid answer. Here such a call keeps its raw text
 * under UNPARSED_INPUT, so the turn answers it with an error the model can act on.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { AnthropicError, APIUserAbortError } from '@anthropic-ai/sdk';
import { UNPARSED_INPUT } from '../shared/unparsed-input.js';

type Block = Anthropic.ContentBlock;

/** The input of a tool call whose JSON text is complete (or empty), or the raw text under UNPARSED_INPUT. */
export function toolInput(json: string): Record<string, unknown> {
  if (!json.trim()) return {};
  try {
    const v: unknown = JSON.parse(json);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* kept raw below */
  }
  return { [UNPARSED_INPUT]: json };
}

function applyDelta(block: Block | undefined, delta: Anthropic.RawContentBlockDelta, json: Map<number, string>, index: number): void {
  if (delta.type === 'input_json_delta') json.set(index, (json.get(index) ?? '') + delta.partial_json);
  else if (delta.type === 'text_delta' && block?.type === 'text') block.text += delta.text;
  else if (delta.type === 'citations_delta' && block?.type === 'text') block.citations = [...(block.citations ?? []), delta.citation];
  else if (delta.type === 'thinking_delta' && block?.type === 'thinking') block.thinking += delta.thinking;
  else if (delta.type === 'signature_delta' && block?.type === 'thinking') block.signature = delta.signature;
}

/**
 * Told of a reply's usage once the stream has said it: `final` at message_delta (the API billed the
 * reply, whatever follows), or not when the stream broke after message_start and before that.
 */
export type UsageSeen = (message: Anthropic.Message, final: boolean) => Promise<void>;

function applyUsage(usage: Anthropic.Usage, delta: Anthropic.MessageDeltaUsage): void {
  usage.output_tokens = delta.output_tokens;
  if (delta.input_tokens != null) usage.input_tokens = delta.input_tokens;
  if (delta.cache_read_input_tokens != null) usage.cache_read_input_tokens = delta.cache_read_input_tokens;
  if (delta.cache_creation_input_tokens != null) usage.cache_creation_input_tokens = delta.cache_creation_input_tokens;
}

/**
 * The reply, once its stream has said message_stop. A stream that ends before that is not a reply:
 * an abort says so as the SDK does (APIUserAbortError), anything else as a reply Kiln could not read.
 * `seen` hears of the reply's usage as soon as it is known, before the rest is read.
 */
export async function replyOf(
  events: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  signal?: AbortSignal | null,
  seen?: UsageSeen,
): Promise<Anthropic.Message> {
  const read: { message?: Anthropic.Message; told?: boolean } = {};
  try {
    if (await readEvents(events, read, seen)) return read.message!;
  } finally {
    // a stream cut after message_start: its input was billed all the same
    if (read.message && !read.told) await seen?.(read.message, false);
  }
  if (signal?.aborted) throw new APIUserAbortError();
  throw new AnthropicError("the model API's stream ended before its reply did");
}

/** Reads the events into `read.message`; true once message_stop came. */
async function readEvents(
  events: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  read: { message?: Anthropic.Message; told?: boolean },
  seen?: UsageSeen,
): Promise<boolean> {
  const json = new Map<number, string>();
  for await (const e of events) {
    const message = read.message;
    if (e.type === 'message_start') read.message = { ...e.message, content: [], usage: { ...e.message.usage } };
    else if (!message) throw new AnthropicError(`the model API's stream sent ${e.type} before message_start`);
    else if (e.type === 'content_block_start') {
      message.content[e.index] = structuredClone(e.content_block);
      if (e.content_block.type === 'tool_use' || e.content_block.type === 'server_tool_use') json.set(e.index, '');
    } else if (e.type === 'content_block_delta') applyDelta(message.content[e.index], e.delta, json, e.index);
    else if (e.type === 'content_block_stop') {
      const block = message.content[e.index];
      if (block && 'input' in block && json.has(e.index)) block.input = toolInput(json.get(e.index)!);
    } else if (e.type === 'message_delta') {
      message.stop_reason = e.delta.stop_reason;
      message.stop_sequence = e.delta.stop_sequence;
      applyUsage(message.usage, e.usage);
      read.told = true;
      await seen?.(message, true);
    } else if (e.type === 'message_stop') return true;
  }
  return false;
}
