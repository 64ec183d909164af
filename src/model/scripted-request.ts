import { z } from 'zod';

/**
 * The parts of a Messages API request the scripted server reads. Loose: fields it does
 * not know pass through, as a newer SDK may send them.
 */
const BlockSchema = z.looseObject({ type: z.string() });

export const MessagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant', 'system']), content: z.union([z.string(), z.array(BlockSchema)]) })).min(1),
  system: z.union([z.string(), z.array(BlockSchema)]).optional(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
  stream: z.boolean().optional(),
});

export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;
export type RequestBlock = z.infer<typeof BlockSchema>;
type RequestMessage = MessagesRequest['messages'][number];

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  return value
    .map((b) => blockText(b as RequestBlock))
    .filter((t) => t !== '')
    .join('\n');
}

/** The text a block carries: a text block's text, a tool result's content. */
export function blockText(block: RequestBlock): string {
  if (block.type === 'text') return typeof block.text === 'string' ? block.text : '';
  if (block.type === 'tool_result') return textOf(block.content);
  return '';
}

export function blocksOf(message: RequestMessage): RequestBlock[] {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
}

export function lastUserMessage(req: MessagesRequest): RequestMessage | undefined {
  for (let i = req.messages.length - 1; i >= 0; i--) if (req.messages[i]?.role === 'user') return req.messages[i];
  return undefined;
}

/** The system prompt, including mid-conversation system messages. */
export function systemText(req: MessagesRequest): string {
  const parts = [textOf(req.system)];
  for (const m of req.messages) if (m.role === 'system') parts.push(textOf(m.content));
  return parts.filter((t) => t !== '').join('\n');
}
