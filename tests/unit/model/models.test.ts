import { describe, expect, it } from 'vitest';
import { acceptsSamplingParams, DEFAULT_MODEL, parseModelSpec } from '../../../src/model/index.js';

describe('parseModelSpec', () => {
  it('tells a script from a model id', () => {
    expect(parseModelSpec('scripted:demo/fix.json', '/repo')).toEqual({ kind: 'scripted', scriptPath: '/repo/demo/fix.json' });
    expect(parseModelSpec('scripted:/abs/s.json', '/repo')).toEqual({ kind: 'scripted', scriptPath: '/abs/s.json' });
    expect(parseModelSpec('claude-opus-5-5')).toEqual({ kind: 'api', model: 'claude-opus-5-5' });
    expect(parseModelSpec('')).toEqual({ kind: 'api', model: DEFAULT_MODEL });
    expect(() => parseModelSpec('scripted:')).toThrow(/needs a script file/);
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
