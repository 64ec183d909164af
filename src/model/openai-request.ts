/**
 * Kiln's request (the conversation as the Messages API keeps it) in Chat Completions' shape. The
 * conversation stays Anthropic-shaped everywhere else (history, checkpoints, replay), so this
 * mapping is one way per call and holds no state.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { UNPARSED_INPUT } from '../shared/unparsed-input.js';
import type { ModelRequest } from './request.js';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
type Block = Anthropic.ContentBlockParam;

/** A block that has no Chat Completions counterpart (an image, a document) is named, not dropped unseen. */
function textOf(block: Block): string {
  if (block.type === 'text') return block.text;
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return '';
  return `[${block.type} omitted: this model API takes text only]`;
}

export function resultText(block: Anthropic.ToolResultBlockParam): string {
  const content = block.content;
  const text = typeof content === 'string' ? content : (content ?? []).map((b) => textOf(b as Block)).join('\n');
  // Chat Completions has no is_error flag: the model reads it in the text
  return block.is_error ? `Error: ${text}` : text;
}

/** The arguments as the model sent them: a call Kiln could not parse goes back as its own raw text. */
export function argumentsOf(input: unknown): string {
  const raw = input && typeof input === 'object' ? (input as Record<string, unknown>)[UNPARSED_INPUT] : undefined;
  return typeof raw === 'string' ? raw : JSON.stringify(input ?? {});
}

/** The text of blocks that are not tool calls or results, one paragraph a block. */
export function contentText(blocks: Block[]): string {
  return blocks
    .map((b) => (b.type === 'tool_use' || b.type === 'tool_result' ? '' : textOf(b)))
    .filter((t) => t !== '')
    .join('\n');
}

function assistantMessage(content: Block[]): ChatMessage {
  const text = contentText(content);
  const calls = content
    .filter((b): b is Anthropic.ToolUseBlockParam => b.type === 'tool_use')
    .map((b) => ({ id: b.id, type: 'function' as const, function: { name: b.name, arguments: argumentsOf(b.input) } }));
  return { role: 'assistant', content: text || (calls.length ? null : '(empty reply)'), ...(calls.length ? { tool_calls: calls } : {}) };
}

/** A user turn: its tool results first (Chat Completions wants them right after the calls), then its text. */
function userMessages(content: Block[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const b of content) if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: resultText(b) });
  const text = contentText(content);
  if (text) out.push({ role: 'user', content: text });
  return out;
}

export function chatMessages(req: Pick<ModelRequest, 'system' | 'rules' | 'messages'>): ChatMessage[] {
  const system = [req.system, req.rules ?? ''].filter((t) => t.trim() !== '').join('\n\n');
  const out: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of req.messages) {
    const blocks: Block[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (m.role === 'assistant') out.push(assistantMessage(blocks));
    else out.push(...userMessages(blocks));
  }
  return out;
}

/**
 * Reasoning models (o-series, gpt-5) answer a temperature other than the default with a 400, as
 * Anthropic's newest models do; other ids keep it.
 */
export function takesTemperature(model: string): boolean {
  return !/^(o\d|gpt-5)/i.test(model);
}

export type ChatParams = OpenAI.Chat.ChatCompletionCreateParamsStreaming;

/**
 * One turn's request, streamed with its usage. OpenAI itself wants `max_completion_tokens`;
 * servers that copy the API (vLLM, Ollama, LM Studio) still read `max_tokens`.
 */
export function buildChatParams(model: string, req: ModelRequest, o: { openai: boolean }): ChatParams {
  const tools: OpenAI.Chat.ChatCompletionTool[] = req.tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.input_schema },
  }));
  return {
    model,
    messages: chatMessages(req),
    stream: true,
    stream_options: { include_usage: true },
    ...(o.openai ? { max_completion_tokens: req.maxTokens } : { max_tokens: req.maxTokens }),
    ...(tools.length ? { tools } : {}),
    ...(req.forceTool ? { tool_choice: { type: 'function', function: { name: req.forceTool } } } : {}),
    ...(req.temperature !== undefined && (!o.openai || takesTemperature(model)) ? { temperature: req.temperature } : {}),
  };
}
