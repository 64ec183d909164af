import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { expect } from 'vitest';
import { ModelError, type ModelRequest } from '../../../src/model/index.js';

export async function scriptFile(script: unknown, name = 'script.json'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kiln-model-'));
  const file = path.join(dir, name);
  await writeFile(file, typeof script === 'string' ? script : JSON.stringify(script, null, 2));
  return file;
}

/** A request the size of a real first turn: a long system prompt and a few tools. */
export function firstRequest(goal = 'fix the revoked session bug'): ModelRequest {
  return {
    system: 'You are Kiln, a careful coding agent. Read before you edit; run the checks. '.repeat(40),
    rules: 'Project rules: use 2-space indent; never touch tests/. '.repeat(10),
    tools: ['read_file', 'edit', 'run_command'].map((name) => ({
      name,
      description: `The ${name} tool. `.repeat(10),
      input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    })),
    messages: [{ role: 'user', content: goal }],
    maxTokens: 4096,
  };
}

/** The next request of the agent loop: the assistant's answer and one result per tool call. */
export function nextRequest(prev: ModelRequest, content: Anthropic.ContentBlock[], result: string, isError = false): ModelRequest {
  const calls = content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  return {
    ...prev,
    messages: [
      ...prev.messages,
      { role: 'assistant', content: content as Anthropic.ContentBlockParam[] },
      {
        role: 'user',
        content: calls.length > 0 ? calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: result, is_error: isError })) : result,
      },
    ],
  };
}

/** The ModelError a call fails with (the test fails if it succeeds or throws something else). */
export async function failure(p: Promise<unknown>): Promise<ModelError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}
