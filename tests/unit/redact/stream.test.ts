import { describe, expect, it } from 'vitest';
import { createStreamRedactor, redact } from '../../../src/redact/index.js';

function feed(chunks: string[]): string {
  const r = createStreamRedactor();
  return chunks.map((c) => r.push(c)).join('') + r.end();
}

const TOKEN = 'ghp_' + 'T'.repeat(36);
const PEM_LINES = [
  '-----BEGIN OPENSSH PRIVATE KEY-----',
  'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
  'QyNTUxOQAAACDH1Yk2e2xN0s4Yz7rL8nT1cQ3o9W0z5qv6Jm2Xc8dEhwAAAJgN2Z7aDdme',
  '-----END OPENSSH PRIVATE KEY-----',
];

describe('createStreamRedactor', () => {
  it('masks a token split over two chunks', () => {
    const out = feed(['push with ' + TOKEN.slice(0, 10), TOKEN.slice(10) + ' done\n']);
    expect(out).toBe('push with [REDACTED:github-token] done\n');
  });

  it('masks a token split at every possible point', () => {
    const text = `log line\nexport GH=${TOKEN}\nnext\n`;
    for (let i = 1; i < text.length; i++) {
      const out = feed([text.slice(0, i), text.slice(i)]);
      expect(out, `split at ${i}`).toBe(redact(text));
      expect(out).not.toContain('TTTTTTTT');
    }
  });

  it('masks a PEM block that arrives over many chunks', () => {
    const text = 'key follows\n' + PEM_LINES.join('\n') + '\nafter\n';
    const chunks = text.match(/[\s\S]{1,7}/g) ?? [];
    const r = createStreamRedactor();
    const early: string[] = [];
    for (const c of chunks) early.push(r.push(c));
    const out = early.join('') + r.end();
    expect(out).toBe('key follows\n[REDACTED:private-key]\nafter\n');
    expect(early.join('')).not.toContain('b3BlbnNz');
  });

  it('passes complete lines through without waiting for the end', () => {
    const r = createStreamRedactor();
    expect(r.push('one\ntwo')).toBe('one\n');
    expect(r.push('\n')).toBe('two\n');
    expect(r.end()).toBe('');
  });

  it('releases a very long line without newlines at whitespace, secrets intact', () => {
    const r = createStreamRedactor();
    let out = '';
    for (let i = 0; i < 2000; i++) out += r.push(`word${i} ${i === 1500 ? TOKEN + ' ' : ''}`);
    expect(out.length).toBeGreaterThan(0);
    out += r.end();
    expect(out).toContain('[REDACTED:github-token]');
    expect(out).not.toContain('TTTTTTTT');
  });

  it('masks an unterminated PEM block at end()', () => {
    expect(feed(['x\n', PEM_LINES[0] + '\n', PEM_LINES[1] + '\n'])).toBe('x\n[REDACTED:private-key]');
  });
});
