import { describe, expect, it } from 'vitest';
import { acceptsSamplingParams, DEFAULT_MODEL, parseModelSpec } from '../../../src/model/index.js';
import { ModelSpecError } from '../../../src/model/models.js';

describe('parseModelSpec', () => {
  it('tells a script from a model id', () => {
    expect(parseModelSpec('scripted:demo/fix.json', '/repo')).toEqual({ kind: 'scripted', scriptPath: '/repo/demo/fix.json' });
    expect(parseModelSpec('scripted:/abs/s.json', '/repo')).toEqual({ kind: 'scripted', scriptPath: '/abs/s.json' });
    expect(parseModelSpec('claude-opus-5-5')).toEqual({ kind: 'api', provider: 'anthropic', model: 'claude-opus-5-5' });
    expect(parseModelSpec('')).toEqual({ kind: 'api', provider: 'anthropic', model: DEFAULT_MODEL });
    expect(() => parseModelSpec('scripted:')).toThrow(/needs a script file/);
  });

  it.each([
    ['anthropic:claude-haiku-5-5', { provider: 'anthropic', model: 'claude-haiku-5-5' }],
    ['openai:gpt-5-mini', { provider: 'openai', model: 'gpt-5-mini' }],
    // a Bedrock id holds a colon but names no provider
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', { provider: 'anthropic', model: 'anthropic.claude-3-5-sonnet-20240620-v1:0' }],
    ['openai-compatible@http://localhost:8000:qwen3-coder', { provider: 'openai-compatible', baseURL: 'http://localhost:8000', model: 'qwen3-coder' }],
    ['openai-compatible@http://localhost:11434/v1:llama3.1:8b', { provider: 'openai-compatible', baseURL: 'http://localhost:11434/v1', model: 'llama3.1:8b' }],
    ['openai-compatible@https://llm.internal/v1/:m', { provider: 'openai-compatible', baseURL: 'https://llm.internal/v1', model: 'm' }],
    ['openai-compatible@http://[::1]:1234:local-model', { provider: 'openai-compatible', baseURL: 'http://[::1]:1234', model: 'local-model' }],
  ])('reads %s', (spec, parsed) => {
    expect(parseModelSpec(spec)).toEqual({ kind: 'api', ...parsed });
  });

  it.each([
    ['openai:', /names no model after "openai:"/],
    ['anthropic: ', /names no model after "anthropic:"/],
    ['gemini:gemini-3-pro', /no provider named "gemini"; name a model as anthropic:MODEL, openai:MODEL, openai-compatible@/],
    ['openai-compatible:http://h:1:m', /the server goes after an @/],
    ['openai-compatible@localhost:8000:m', /expected openai-compatible@http:\/\/host:port:MODEL/],
    ['openai-compatible@http://localhost:8000', /names a server but no model/],
    ['openai-compatible@http://localhost:8000: ', /names a server but no model/],
  ])('refuses %s with a clear error', (spec, message) => {
    expect(() => parseModelSpec(spec)).toThrow(ModelSpecError);
    expect(() => parseModelSpec(spec)).toThrow(message);
  });
});

describe('acceptsSamplingParams', () => {
  it.each([
    ['claude-sonnet-4-6', true],
    ['claude-sonnet-4-20250514', true],
    ['claude-opus-4-1-20250805', true],
    ['claude-haiku-4-5', true],
    ['claude-3-7-sonnet-20250219', true],
    ['my-proxy-model', true],
    ['claude-opus-4-7', false],
    ['claude-sonnet-5', false],
    ['claude-sonnet-5-5', false],
    ['claude-haiku-5-5', false],
    ['claude-fable-5-1', false],
    ['claude-mythos-preview', false],
  ])('%s → %s', (model, accepts) => {
    expect(acceptsSamplingParams(model)).toBe(accepts);
  });
});
