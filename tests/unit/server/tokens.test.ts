/** `kiln token`: a token shown once, kept only as its hash in a 0600 file; revocation and bad names. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenStore } from '../../../src/server/tokens.js';

const dirs: string[] = [];
const store = () => {
  dirs.push(mkdtempSync(join(tmpdir(), 'kiln-tokens-')));
  return new TokenStore(join(dirs.at(-1)!, 'server', 'tokens.json'));
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('TokenStore', () => {
  it('keeps the hash, never the token, in a file only its owner reads', () => {
    const s = store();
    const { token, record } = s.create({ tenant: 'acme', user: 'alice', role: 'runner' });
    const text = readFileSync(s.file, 'utf8');
    expect(text).not.toContain(token);
    expect(text).toContain(record.sha256);
    expect(statSync(s.file).mode & 0o777).toBe(0o600);
    expect(s.verify(token)).toEqual({ tokenId: record.id, tenant: 'acme', user: 'alice', role: 'runner' });
  });

  it('refuses a token one character off, a revoked token, and a hash presented as the token', () => {
    const s = store();
    const { token, record } = s.create({ tenant: 'acme', user: 'alice' });
    expect(s.verify(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'))).toBeUndefined();
    expect(s.verify(record.sha256)).toBeUndefined();
    expect(s.verify(token)?.role).toBe('viewer');
    s.revoke(record.id);
    expect(s.verify(token)).toBeUndefined();
  });

  it('says what to fix for a bad tenant, user, role or id', () => {
    const s = store();
    expect(() => s.create({ tenant: "a'b", user: 'u' })).toThrow(/--tenant a'b: use letters/);
    expect(() => s.create({ tenant: 't', user: '' })).toThrow(/--user/);
    expect(() => s.create({ tenant: 't', user: 'u', role: 'admin' })).toThrow(/--role admin: use one of viewer, runner, approver/);
    expect(() => s.revoke('tok-nope')).toThrow(/no token tok-nope/);
  });
});
