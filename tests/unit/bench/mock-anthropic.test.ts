/**
 * The side-by-side bench's mock Anthropic endpoint, driven by the real SDK the way harnesses
 * call it: plain and streamed replies parse, the turn follows the conversation, the last turn
 * finishes, and the harness time per turn is measured between a reply and the next request.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { harnessTurns, MOCK_COMMAND, startMockAnthropic } from '../../../bench/mock-anthropic.js';

const mock = await startMockAnthropic({ turns: 3 });
afterAll(() => mock.close());
const sdk = new Anthropic({ apiKey: 'dummy', baseURL: mock.url, maxRetries: 0 });
const kilnTools = ['run_command', 'finish'].map((name) => ({ name, input_schema: { type: 'object' as const } }));

async function converse(tools: Array<{ name: string; input_schema: { type: 'object' } }>, stream: boolean): Promise<Anthropic.Message[]> {
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `task ${Math.random()}` }];
  const replies: Anthropic.Message[] = [];
  for (let i = 0; i < 3; i++) {
    const params = { model: 'any', max_tokens: 100, messages, tools };
    const reply = stream ? await sdk.messages.stream(params).finalMessage() : await sdk.messages.create(params);
    replies.push(reply);
    messages.push({ role: 'assistant', content: reply.content });
    const uses = reply.content.filter((b) => b.type === 'tool_use');
    messages.push({ role: 'user', content: uses.length ? uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'ok' })) : 'go on' });
  }
  return replies;
}

describe('the mock Anthropic endpoint', () => {
  it("answers Kiln's tools: a command each turn, finish on the last", async () => {
    mock.reset();
    const replies = await converse(kilnTools, false);
    const calls = replies.map((r) => r.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock);
    expect(calls.map((c) => c.name)).toEqual(['run_command', 'run_command', 'finish']);
    expect(calls[1]!.input).toMatchObject({ command: `${MOCK_COMMAND} 2` });
    const h = harnessTurns(mock.requests);
    expect(h.turns).toBe(3);
    expect(h.turnMs.n).toBe(2);
    expect(h.turnMs.p50).toBeGreaterThanOrEqual(0);
  });

  it('streams a Bash call a Claude Code-style harness can parse, and ends with text', async () => {
    mock.reset();
    const replies = await converse([{ name: 'Bash', input_schema: { type: 'object' } }], true);
    const first = replies[0]!.content[0] as Anthropic.ToolUseBlock;
    expect(first).toMatchObject({ type: 'tool_use', name: 'Bash', input: { command: MOCK_COMMAND } });
    expect(replies[2]!.stop_reason).toBe('end_turn');
    expect(replies[2]!.content[0]).toMatchObject({ type: 'text', text: 'Done.' });
  });

  it('counts only the main conversation as turns, not side calls', async () => {
    mock.reset();
    await converse(kilnTools, false);
    await sdk.messages.create({ model: 'any', max_tokens: 10, messages: [{ role: 'user', content: 'a title please' }] });
    expect(harnessTurns(mock.requests).turns).toBe(3);
  });
});
