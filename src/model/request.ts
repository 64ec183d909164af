import type Anthropic from '@anthropic-ai/sdk';
import { acceptsSamplingParams } from './models.js';

export interface ModelTool {
  name: string;
  description: string;
  /** JSON Schema of the input, an object schema (from z.toJSONSchema) */
  input_schema: Record<string, unknown>;
}

export interface ModelRequest {
  system: string;
  /** the project's rules (AGENTS.md …), kept apart so the system prompt stays byte-identical across repos */
  rules?: string;
  tools: readonly ModelTool[];
  messages: Anthropic.MessageParam[];
  maxTokens: number;
  /** dropped for models that reject sampling parameters (see acceptsSamplingParams) */
  temperature?: number;
  /** the one tool the reply must call (a structured answer, as the reviewer's verdict) */
  forceTool?: string;
}

const EPHEMERAL: Anthropic.CacheControlEphemeral = { type: 'ephemeral' };

/** Block types whose params take cache_control; thinking blocks do not. */
const CACHEABLE = new Set(['text', 'image', 'document', 'search_result', 'tool_use', 'tool_result']);

type Block = Anthropic.ContentBlockParam;

/** Array#findLastIndex is ES2023; the project compiles against ES2022 lib types. */
function lastIndex<T>(items: readonly T[], pred: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (pred(items[i] as T)) return i;
  return -1;
}

function withoutCacheControl(block: Block): Block {
  if (!('cache_control' in block) || block.cache_control == null) return block;
  const { cache_control: _drop, ...rest } = block;
  return rest as Block;
}

/**
 * The moving breakpoint: the last cacheable block of the last user message gets
 * cache_control, so the next turn reads everything up to here from the cache. Breakpoints
 * the caller left in earlier messages are removed, which keeps the request within the
 * API's limit of four (system, tools, this one). Copies; the caller's messages stay as they were.
 */
function markLastUserMessage(messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  const last = lastIndex(messages, (m) => m.role === 'user');
  return messages.map((message, i) => {
    if (message.role === 'system') return message;
    if (typeof message.content === 'string') {
      if (i !== last || message.content === '') return message;
      return { ...message, content: [{ type: 'text', text: message.content, cache_control: EPHEMERAL }] };
    }
    const blocks = message.content.map(withoutCacheControl);
    if (i === last) {
      const at = lastIndex(blocks, (b) => CACHEABLE.has(b.type));
      const target = blocks[at];
      if (target) blocks[at] = { ...target, cache_control: EPHEMERAL } as Block;
    }
    return { ...message, content: blocks } as Anthropic.MessageParam;
  });
}

/**
 * SDK 1.x no longer types `temperature` (current models reject it), but the API still
 * takes it for models up to Sonnet/Opus 4.6 and Haiku 4.5, so it is sent for those.
 */
export type MessageParams = Anthropic.MessageCreateParamsNonStreaming & { temperature?: number };

/** The Messages API request for one turn, with prompt-cache breakpoints on system, tools and the last user message. */
export function buildMessageParams(model: string, req: ModelRequest): MessageParams {
  const systemTexts = [req.system, req.rules ?? ''].filter((text) => text.trim() !== '');
  const system: Anthropic.TextBlockParam[] = systemTexts.map((text, i) => ({
    type: 'text',
    text,
    ...(i === systemTexts.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }));
  const tools: Anthropic.Tool[] = req.tools.map((tool, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.input_schema as Anthropic.Tool.InputSchema,
    ...(i === req.tools.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }));
  return {
    model,
    max_tokens: req.maxTokens,
    ...(system.length > 0 ? { system } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    messages: markLastUserMessage(req.messages),
    ...(req.forceTool ? { tool_choice: { type: 'tool', name: req.forceTool } } : {}),
    ...(req.temperature !== undefined && acceptsSamplingParams(model) ? { temperature: req.temperature } : {}),
  };
}
