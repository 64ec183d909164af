import { expect, test } from 'vitest';
import { CappedOutput, LineChunker } from '../../../src/sandbox/output-buffer.js';

test('under the cap the output is kept whole', () => {
  const c = new CappedOutput(100);
  c.push(Buffer.from('hello '));
  c.push(Buffer.from('world\n'));
  expect(c.text()).toBe('hello world\n');
  expect(c.truncated).toBe(false);
  expect(c.totalBytes).toBe(12);
});

test('over the cap the head and the tail survive, and the marker counts the bytes cut', () => {
  const c = new CappedOutput(20);
  c.push(Buffer.from('HEAD-0123456789'));
  for (let i = 0; i < 100; i++) c.push(Buffer.from('middle-'));
  c.push(Buffer.from('0123456789-TAIL'));
  const text = c.text();
  expect(c.truncated).toBe(true);
  expect(text.startsWith('HEAD-01234')).toBe(true);
  expect(text.endsWith('56789-TAIL')).toBe(true);
  const cut = Number(/kiln: (\d+) bytes of output cut/.exec(text)?.[1]);
  expect(cut).toBe(c.totalBytes - 20);
});

test('the line chunker emits whole lines and keeps multi-byte characters intact', () => {
  const out: string[] = [];
  const ch = new LineChunker((s) => out.push(s));
  const euro = Buffer.from('€');
  ch.push(Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]));
  ch.push(Buffer.concat([euro.subarray(1), Buffer.from('b\nc')]));
  expect(out).toEqual(['a€b\n']);
  ch.end();
  expect(out).toEqual(['a€b\n', 'c']);
});
