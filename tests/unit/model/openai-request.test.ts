import { describe, expect, it } from 'vitest';
import { buildChatParams, chatMessages } from '../../../src/model/openai-request.js';
import { openaiCostUsd, openaiPriceFor } from '../../../src/model/openai-pricing.js';
import { buildResponsesParams } from '../../../src/model/openai-responses.js';
import { UNPARSED_INPUT } from '../../../src/shared/unparsed-input.js';
import { firstRequest } from './helpers.js';

describe('the conversation in Chat Completions shape', () => {
  it('puts system and rules first, tool results right after their calls, then the turn text; a bad call goes back as it was sent', () => {
    const messages = chatMessages({
      system: 'be careful',
      rules: 'two spaces',
      messages: [
        { role: 'user', content: 'fix it' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'reading' },
            { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a' } },
            { type: 'tool_use', id: 'c2', name: 'edit', input: { [UNPARSED_INPUT]: '{"path": a}' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'note: 3 turns left' },
            { type: 'tool_result', tool_use_id: 'c1', content: [{ type: 'text', text: 'hello' }] },
            { type: 'tool_result', tool_use_id: 'c2', content: 'not valid JSON', is_error: true },
          ],
        },
      ],
    });
    expect(messages).toEqual([
      { role: 'system', content: 'be careful\n\ntwo spaces' },
      { role: 'user', content: 'fix it' },
      {
        role: 'assistant',
        content: 'reading',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
          { id: 'c2', type: 'function', function: { name: 'edit', arguments: '{"path": a}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'hello' },
      { role: 'tool', tool_call_id: 'c2', content: 'Error: not valid JSON' },
      { role: 'user', content: 'note: 3 turns left' },
    ]);
  });

  it('asks OpenAI for max_completion_tokens and drops temperature for reasoning models; other servers get max_tokens and temperature', () => {
    const req = { ...firstRequest(), temperature: 0.2, forceTool: 'edit' };
    const gpt5 = buildChatParams('gpt-5', req, { openai: true });
    expect(gpt5).toMatchObject({ max_completion_tokens: 4096, stream: true, stream_options: { include_usage: true } });
    expect(gpt5).not.toHaveProperty('temperature');
    expect(gpt5.tool_choice).toEqual({ type: 'function', function: { name: 'edit' } });
    expect(buildChatParams('gpt-4.1', req, { openai: true })).toMatchObject({ temperature: 0.2 });
    const local = buildChatParams('llama3.1:8b', req, { openai: false });
    expect(local).toMatchObject({ max_tokens: 4096, temperature: 0.2 });
    expect(local.tools?.[0]).toMatchObject({ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } });
  });
});

describe('the conversation as Responses API input', () => {
  it('sends system and rules as instructions, calls and their outputs by call_id, nothing stored at OpenAI', () => {
    const params = buildResponsesParams('gpt-5', {
      ...firstRequest(),
      temperature: 0.2,
      messages: [
        { role: 'user', content: 'fix it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'boom', is_error: true }] },
      ],
    });
    expect(params).toMatchObject({ model: 'gpt-5', stream: true, store: false, max_output_tokens: 4096 });
    expect(params.instructions).toContain('You are Kiln');
    expect(params.instructions).toContain('Project rules');
    expect(params).not.toHaveProperty('temperature');
    expect(params.input).toEqual([
      { role: 'user', content: 'fix it' },
      { type: 'function_call', call_id: 'c1', name: 'read_file', arguments: '{"path":"a"}' },
      { type: 'function_call_output', call_id: 'c1', output: 'Error: boom' },
    ]);
    expect(params.tools?.[0]).toMatchObject({ type: 'function', name: 'read_file', strict: false });
  });
});

describe('OpenAI prices', () => {
  it('prices cached prompt tokens at the cached rate, and an unlisted model as its listed prefix or gpt-5', () => {
    expect(openaiCostUsd('gpt-4.1', { input: 1_000_000, output: 1_000_000, cacheRead: 1_000_000, cacheWrite: 0 })).toBeCloseTo(2 + 8 + 0.5);
    expect(openaiPriceFor('gpt-4.1-2025-04-14')).toMatchObject({ model: 'gpt-4.1', listed: true });
    expect(openaiPriceFor('gpt-5-mini-preview')).toMatchObject({ model: 'gpt-5-mini', listed: false });
    expect(openaiPriceFor('some-new-model')).toMatchObject({ model: 'gpt-5', listed: false });
  });
});
