import { describe, expect, it } from 'vitest';
import { freshStuck, observeCall, observeIdleTurn, STUCK_LIMITS } from '../../../src/loop/stuck.js';

const call = (fingerprint: string, result: string, isError = false, malformed = false) => ({ fingerprint, result, isError, malformed });

describe('stuck detection', () => {
  it('the same call with the same result three times in a row is stuck; a different result resets', () => {
    const s = freshStuck();
    expect(observeCall(s, call('a', 'x'))).toBeUndefined();
    expect(observeCall(s, call('a', 'y'))).toBeUndefined();
    expect(observeCall(s, call('a', 'y'))).toBeUndefined();
    expect(observeCall(s, call('a', 'y'))).toMatch(/same call with the same result 3 times/);
  });

  it('the same error repeated is stuck even from different calls', () => {
    const s = freshStuck();
    observeCall(s, call('a', 'ENOENT', true));
    observeCall(s, call('b', 'ENOENT', true));
    expect(observeCall(s, call('c', 'ENOENT', true))).toMatch(/same error 3 times/);
  });

  it('a success between errors resets the error streak', () => {
    const s = freshStuck();
    observeCall(s, call('a', 'E', true));
    observeCall(s, call('b', 'E', true));
    observeCall(s, call('c', 'ok'));
    expect(observeCall(s, call('d', 'E', true))).toBeUndefined();
  });

  it('malformed calls in a row end the attempt', () => {
    const s = freshStuck();
    for (let i = 1; i < STUCK_LIMITS.malformed; i++) expect(observeCall(s, call(`m${i}`, `bad ${i}`, true, true))).toBeUndefined();
    expect(observeCall(s, call('m9', 'bad 9', true, true))).toMatch(/malformed tool calls in a row/);
  });

  it('talking without acting for three turns is stuck; acting resets it', () => {
    const s = freshStuck();
    observeIdleTurn(s);
    observeIdleTurn(s);
    observeCall(s, call('a', 'x'));
    observeIdleTurn(s);
    observeIdleTurn(s);
    expect(observeIdleTurn(s)).toMatch(/3 turns of talk without acting/);
  });
});

describe('cycles', () => {
  const feed = (keys: string[], cycles = true) => {
    const s = freshStuck();
    let why: string | undefined;
    for (const k of keys) why ??= observeCall(s, call(k, `result of ${k}`), { cycles });
    return why;
  };

  it('an A/B read loop ends after three rounds, not at the budget', () => {
    expect(feed(['a', 'b', 'a', 'b', 'a'])).toBeUndefined();
    expect(feed(['a', 'b', 'a', 'b', 'a', 'b'])).toMatch(/cycle of 2 calls repeated 3 times/);
  });

  it('finds periods 3 and 4', () => {
    expect(feed('abcabcabc'.split(''))).toMatch(/cycle of 3/);
    expect(feed('abcdabcdabcd'.split(''))).toMatch(/cycle of 4/);
  });

  it('control: work that moves on is not a cycle (same calls, different results; period 5)', () => {
    const s = freshStuck();
    const seq = ['edit', 'test', 'edit', 'test', 'edit', 'test'];
    expect(seq.map((k, i) => observeCall(s, call(k, `${k} ${i}`), { cycles: true })).filter(Boolean)).toEqual([]);
    expect(feed('abcdeabcdeabcde'.split(''))).toBeUndefined();
  });

  it('off unless asked (runs recorded before cycle detection replay unchanged)', () => {
    expect(feed(['a', 'b', 'a', 'b', 'a', 'b'], false)).toBeUndefined();
  });
});
