import type { ScriptExpect } from './script.js';
import { blocksOf, blockText, lastUserMessage, systemText, type MessagesRequest } from './scripted-request.js';

const SHOWN = 200;

function got(text: string): string {
  if (text === '') return 'got nothing';
  return `got: ${JSON.stringify(text.slice(0, SHOWN))}${text.length > SHOWN ? '…' : ''}`;
}

/** Checks a request against a step's `expect`; returns what is wrong, or undefined when it matches. */
export function unmetExpectation(expect: ScriptExpect | undefined, req: MessagesRequest): string | undefined {
  if (!expect) return undefined;
  const user = lastUserMessage(req);
  const blocks = user ? blocksOf(user) : [];
  const results = blocks.filter((b) => b.type === 'tool_result');
  const resultText = results.map(blockText).join('\n');

  if (expect.tool_result_contains !== undefined) {
    if (results.length === 0)
      return `expected a tool result containing ${JSON.stringify(expect.tool_result_contains)}, but the last user message has no tool result (${got(blocks.map(blockText).join('\n'))})`;
    if (!resultText.includes(expect.tool_result_contains))
      return `expected a tool result containing ${JSON.stringify(expect.tool_result_contains)}, ${got(resultText)}`;
  }
  if (expect.tool_result_is_error !== undefined) {
    const anyError = results.some((b) => b.is_error === true);
    if (results.length === 0 || anyError !== expect.tool_result_is_error)
      return `expected a tool result with is_error ${expect.tool_result_is_error}, ${results.length === 0 ? 'but the last user message has no tool result' : got(resultText)}`;
  }
  if (expect.user_contains !== undefined) {
    const text = blocks.map(blockText).join('\n');
    if (!text.includes(expect.user_contains)) return `expected the last user message to contain ${JSON.stringify(expect.user_contains)}, ${got(text)}`;
  }
  if (expect.system_contains !== undefined) {
    const text = systemText(req);
    if (!text.includes(expect.system_contains)) return `expected the system prompt to contain ${JSON.stringify(expect.system_contains)}, ${got(text)}`;
  }
  return undefined;
}
