/** Output is redacted before it is cut into head and tail, so no fragment of a secret survives the cut. */
import { describe, expect, it } from 'vitest';
import { CappedOutput } from '../../../src/sandbox/output-buffer.js';

const TOKEN = 'ghp_' + 'Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98';

describe('capped command output', () => {
  it('attack: a token straddling the head/tail cut leaves no fragment', () => {
    const out = new CappedOutput(200);
    // the head keeps 100 bytes: the token starts 80 bytes in and runs past the cut
    out.push(Buffer.from('x'.repeat(80) + TOKEN + ' and more\n'));
    out.push(Buffer.from('y'.repeat(5000) + '\n'));
    const text = out.text();
    expect(text).toContain('bytes of output cut');
    expect(text).not.toContain(TOKEN.slice(0, 12));
    expect(text).not.toContain(TOKEN.slice(-12));
    expect(text).not.toMatch(/ghp_[A-Za-z0-9]{4}/);
  });

  it('control: plain output under the cap comes back byte for byte; over it, head and tail stay readable', () => {
    const small = new CappedOutput(1000);
    small.push(Buffer.from('line one\nline two with no newline at the end'));
    expect(small.text()).toBe('line one\nline two with no newline at the end');
    const big = new CappedOutput(100);
    big.push(Buffer.from('BEGIN ' + 'z'.repeat(1000) + ' END\n'));
    expect(big.text()).toMatch(/^BEGIN z+/);
    expect(big.text()).toMatch(/z+ END\n$/);
  });
});
