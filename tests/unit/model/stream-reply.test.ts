import type Anthropic from '@anthropic-ai/sdk';
import { AnthropicError, APIUserAbortError } from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { replyOf, toolInput } from '../../../src/model/stream-reply.js';
import { UNPARSED_INPUT } from '../../../src/shared/unparsed-input.js';

type Ev = Anthropic.RawMessageStreamEvent;
const start: Ev = {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  } as unknown as Anthropic.Message,
};
const tool = (index: number, json: string[]): Ev[] => [
  { type: 'content_block_start', index, content_block: { type: 'tool_use', id: `toolu_${index}`, name: 'edit', input: {} } } as Ev,
  ...json.map((partial_json) => ({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }) as Ev),
  { type: 'content_block_stop', index },
];
const end: Ev[] = [
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 42 } } as Ev,
  { type: 'message_stop' },
];
async function* events(list: Ev[]) {
  for (const e of list) yield e;
}

describe('a streamed reply put together', () => {
  it('keeps every block, a text and tool calls, with their inputs and the final usage', async () => {
    const text: Ev[] = [
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'I will ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'edit.' } },
      { type: 'content_block_stop', index: 0 },
    ];
    const m = await replyOf(events([start, ...text, ...tool(1, ['{"path":', ' "a.ts"}']), ...end]));
    expect(m.content).toEqual([
      { type: 'text', text: 'I will edit.', citations: null },
      { type: 'tool_use', id: 'toolu_1', name: 'edit', input: { path: 'a.ts' } },
    ]);
    expect(m.stop_reason).toBe('tool_use');
    expect(m.usage).toMatchObject({ input_tokens: 10, output_tokens: 42 });
  });

  it('keeps a call whose input is not a JSON object as raw text, and the rest of the reply', async () => {
    const m = await replyOf(events([start, ...tool(0, ['{"path": a.ts}']), ...tool(1, ['{}']), ...end]));
    expect(m.content.map((b) => (b as Anthropic.ToolUseBlock).input)).toEqual([{ [UNPARSED_INPUT]: '{"path": a.ts}' }, {}]);
    expect(toolInput('[1, 2]')).toEqual({ [UNPARSED_INPUT]: '[1, 2]' });
    expect(toolInput('')).toEqual({});
  });

  it('a stream that ends before message_stop is not a reply: an abort says so, anything else cannot be read', async () => {
    const cut = [start, ...tool(0, ['{"path": "a.ts"}'])];
    await expect(replyOf(events(cut))).rejects.toBeInstanceOf(AnthropicError);
    const aborted = new AbortController();
    aborted.abort();
    await expect(replyOf(events(cut), aborted.signal)).rejects.toBeInstanceOf(APIUserAbortError);
  });

  it('tells the usage the moment message_delta says it, before the rest is read; a stream cut after its start tells what it had', async () => {
    const told: Array<{ id: string; output: number; final: boolean; stopped: boolean }> = [];
    let stopped = false;
    async function* marked() {
      yield* events([start, ...tool(0, ['{}']), end[0]!]);
      stopped = true;
      yield end[1]!;
    }
    const seen = async (m: Anthropic.Message, final: boolean) => void told.push({ id: m.id, output: m.usage.output_tokens, final, stopped });
    await replyOf(marked(), null, seen);
    expect(told).toEqual([{ id: 'msg_1', output: 42, final: true, stopped: false }]);
    // a reply billed whole whose end cannot be read: told once, as final
    told.length = 0;
    await expect(replyOf(events([start, end[0]!]), null, seen)).rejects.toBeInstanceOf(AnthropicError);
    expect(told.map((t) => [t.output, t.final])).toEqual([[42, true]]);
    told.length = 0;
    await expect(replyOf(events([start, ...tool(0, ['{"pa'])]), null, seen)).rejects.toBeInstanceOf(AnthropicError);
    expect(told.map((t) => [t.output, t.final])).toEqual([[1, false]]);
  });
});
