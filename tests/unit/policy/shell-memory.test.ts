import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { bashParser } from '../../../src/shell/grammar.js';

/*
 * Its own file, so the grammar is first compiled in this process: V8 tiers hot wasm up with
 * TurboFan in the background, and for the bash grammar that grew a process by ~47 MB (measured
 * standalone: 55 → 102 MB RSS over 2,200 parses). Kept on Liftoff it grows by a few MB.
 */
const rssMB = () => process.memoryUsage().rss / 2 ** 20;

describe('the bash parser’s memory', () => {
  it('stays near its loaded size however many commands it parses', async () => {
    const parser = await bashParser();
    parser.parse('echo warm')?.delete();
    const loaded = rssMB();
    for (let i = 0; i < 3000; i++) parser.parse(`echo turn ${i} && ls -la | grep foo > /tmp/x; for f in *; do cat "$f"; done`)?.delete();
    // tier-up compiles on background threads after the calls that made a function hot
    await sleep(2000);
    expect(rssMB() - loaded).toBeLessThan(20);
  });
});
