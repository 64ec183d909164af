/**
 * The fault server's OpenAI-shaped mode (Chat Completions, streamed): the same replies and faults
 * as the Anthropic mode in fault-server.ts, in the wire format OpenAI and the servers that copy it
 * use, so every fault of the model path can be played against both providers. Tool-call quirks
 * seen from such servers are a reply's options: a call with no id, calls sent at one index.
 */
import type { FaultReply } from './fault-server.js';

/** The stop reason a reply asks for, as Chat Completions says it. */
function finishOf(reply: FaultReply): string {
  const calls = reply.content.some((b) => b.type === 'tool_use');
  const stop = reply.stop_reason ?? (calls ? 'tool_use' : 'end_turn');
  return stop === 'tool_use' ? 'tool_calls' : stop === 'max_tokens' ? 'length' : 'stop';
}

export interface OpenAIStream {
  /** the role chunk, the content, the finish chunk */
  body: string[];
  /** the chunk with the usage (what OpenAI bills) */
  usage: string;
  done: string;
  told: { input: number; output: number };
}

/** The chunks of one reply. A tool_use's rawInput is sent as its arguments as it is; `index` overrides the call's index. */
export function openAIChunks(reply: FaultReply, seq: number, model: string): OpenAIStream {
  const id = `chatcmpl-fault-${seq}`;
  const chunk = (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const body = [chunk({ role: 'assistant', content: '' })];
  let n = 0;
  for (const b of reply.content) {
    if (b.type === 'text') {
      body.push(chunk({ content: b.text }));
      continue;
    }
    const index = b.index ?? n;
    const callId = b.id === null ? {} : { id: b.id ?? `call_fault_${seq}_${n}` };
    n++;
    body.push(chunk({ tool_calls: [{ index, ...callId, type: 'function', function: { name: b.name, arguments: '' } }] }));
    const args = b.rawInput ?? JSON.stringify(b.input);
    if (args) body.push(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
  }
  body.push(chunk({}, finishOf(reply)));
  const told = { input: reply.usage?.input_tokens ?? 100, output: reply.usage?.output_tokens ?? 20 };
  const usage = `data: ${JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created: 0,
    model,
    choices: [],
    usage: { prompt_tokens: told.input, completion_tokens: told.output, total_tokens: told.input + told.output },
  })}\n\n`;
  return { body, usage, done: 'data: [DONE]\n\n', told };
}

/** OpenAI's error body, and the type and code it gives each status. */
export function openAIErrorBody(status: number, type: string, message: string): string {
  const kind =
    type === 'spend_limit'
      ? { type: 'insufficient_quota', code: 'insufficient_quota' }
      : status === 429
        ? { type: 'requests', code: 'rate_limit_exceeded' }
        : status === 401
          ? { type: 'invalid_request_error', code: 'invalid_api_key' }
          : status >= 500
            ? { type: 'server_error', code: null }
            : { type: 'invalid_request_error', code: null };
  return JSON.stringify({ error: { message, ...kind, param: null } });
}

/** A keep-alive while the model thinks: an SSE comment, which clients skip. */
export const OPENAI_PING = ': keep-alive\n\n';

/** The events of one reply on the Responses API: the usage comes with response.completed (or incomplete, for a max_tokens cut), last. */
export function responsesEvents(reply: FaultReply, seq: number, model: string): OpenAIStream {
  const id = `resp_fault_${seq}`;
  let n = 0;
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
  const body = [ev('response.created', { response: { id, object: 'response', model, status: 'in_progress', output: [] } })];
  reply.content.forEach((b, output_index) => {
    const item_id = `item_${seq}_${output_index}`;
    if (b.type === 'text') {
      body.push(
        ev('response.output_item.added', { output_index, item: { type: 'message', id: item_id, role: 'assistant', status: 'in_progress', content: [] } }),
      );
      body.push(ev('response.output_text.delta', { item_id, output_index, content_index: 0, delta: b.text, logprobs: [] }));
      return;
    }
    const callId = b.id === null ? {} : { call_id: b.id ?? `call_fault_${seq}_${output_index}` };
    body.push(
      ev('response.output_item.added', {
        output_index,
        item: { type: 'function_call', id: item_id, ...callId, name: b.name, arguments: '', status: 'in_progress' },
      }),
    );
    body.push(ev('response.function_call_arguments.delta', { item_id, output_index, delta: b.rawInput ?? JSON.stringify(b.input) }));
  });
  const told = { input: reply.usage?.input_tokens ?? 100, output: reply.usage?.output_tokens ?? 20 };
  const cut = reply.stop_reason === 'max_tokens';
  const usage = ev(cut ? 'response.incomplete' : 'response.completed', {
    response: {
      id,
      object: 'response',
      model,
      status: cut ? 'incomplete' : 'completed',
      incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
      output: [],
      usage: {
        input_tokens: told.input,
        output_tokens: told.output,
        total_tokens: told.input + told.output,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    },
  });
  return { body, usage, done: '', told };
}
