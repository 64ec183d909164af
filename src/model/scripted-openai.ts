/**
 * The scripted server's Chat Completions face: a request in OpenAI's shape is read as the Messages
 * request it stands for (so a script's steps, expectations and prompt-cache accounting are the same
 * whichever wire a run speaks), and the scripted reply is streamed back as Chat Completions chunks.
 */
import { z } from 'zod';
import type { ScriptedMessage } from './scripted-reply.js';
import type { MessagesRequest, RequestBlock } from './scripted-request.js';

const ChatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z
    .array(
      z.looseObject({
        role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
        content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
        tool_call_id: z.string().optional(),
        tool_calls: z.array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string(), arguments: z.string() }) })).optional(),
      }),
    )
    .min(1),
  tools: z.array(z.looseObject({ function: z.looseObject({ name: z.string() }) })).optional(),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
});

export type ChatRequest = z.infer<typeof ChatRequestSchema>;
export { ChatRequestSchema };

type ChatMessage = ChatRequest['messages'][number];

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}

function argsOf(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * The Messages request a Chat Completions request stands for. Tool messages and the user text after
 * them are one user turn, as Kiln keeps it; OpenAI's prompt caching is automatic, so the last block
 * carries the breakpoint that the Messages API would have had set.
 */
export function messagesRequestOf(chat: ChatRequest): MessagesRequest {
  const system: string[] = [];
  const messages: MessagesRequest['messages'] = [];
  const userTurn = (): RequestBlock[] => {
    const last = messages.at(-1);
    if (last?.role === 'user' && Array.isArray(last.content)) return last.content;
    const blocks: RequestBlock[] = [];
    messages.push({ role: 'user', content: blocks });
    return blocks;
  };
  for (const m of chat.messages) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    else if (m.role === 'tool') {
      const text = textOf(m.content);
      userTurn().push({ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: text, ...(text.startsWith('Error: ') ? { is_error: true } : {}) });
    } else if (m.role === 'user') userTurn().push({ type: 'text', text: textOf(m.content) });
    else {
      const text = textOf(m.content);
      const calls = (m.tool_calls ?? []).map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: argsOf(c.function.arguments) }));
      messages.push({ role: 'assistant', content: [...(text ? [{ type: 'text', text }] : []), ...calls] });
    }
  }
  const lastBlocks = messages.at(-1)?.content;
  if (Array.isArray(lastBlocks) && lastBlocks.length) lastBlocks[lastBlocks.length - 1] = { ...lastBlocks.at(-1)!, cache_control: { type: 'ephemeral' } };
  return {
    model: chat.model,
    max_tokens: chat.max_completion_tokens ?? chat.max_tokens ?? 4096,
    messages,
    ...(system.length ? { system: system.join('\n\n') } : {}),
    ...(chat.tools ? { tools: chat.tools.map((t) => ({ ...t.function, name: t.function.name })) } : {}),
  };
}

const FINISH: Record<string, string> = { tool_use: 'tool_calls', max_tokens: 'length', end_turn: 'stop' };

/** The scripted reply as the chunks of a streamed chat completion, its usage (cached prompt tokens inside the prompt's) last. */
export function chatChunksOf(msg: ScriptedMessage): string {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: msg.id, object: 'chat.completion.chunk', created: 0, model: msg.model, choices, ...extra, kiln_scripted: true })}\n\n`;
  const delta = (d: unknown, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const out = [delta({ role: 'assistant', content: '' })];
  let n = 0;
  for (const b of msg.content) {
    if (b.type === 'text') out.push(delta({ content: b.text }));
    else if (b.type === 'tool_use')
      out.push(delta({ tool_calls: [{ index: n++, id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }] }));
  }
  out.push(delta({}, FINISH[msg.stop_reason ?? ''] ?? 'stop'));
  const u = msg.usage;
  const cached = u.cache_read_input_tokens ?? 0;
  const prompt = u.input_tokens + cached + (u.cache_creation_input_tokens ?? 0);
  out.push(
    chunk([], {
      usage: {
        prompt_tokens: prompt,
        completion_tokens: u.output_tokens,
        total_tokens: prompt + u.output_tokens,
        prompt_tokens_details: { cached_tokens: cached },
      },
    }),
  );
  out.push('data: [DONE]\n\n');
  return out.join('');
}
