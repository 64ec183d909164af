import { linkSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sensitiveFindings, sensitiveInPatch } from '../../../src/policy/patch-secrets.js';

describe('a patch that carries a secret fails verification', () => {
  it('attack: `ln .env notes.txt` — the hard link is in the changed files', async () => {
    const wt = mkdtempSync(join(tmpdir(), 'kiln-wt-'));
    writeFileSync(join(wt, '.env'), 'API_SECRET=canary-0011223344\n');
    linkSync(join(wt, '.env'), join(wt, 'notes.txt'));
    expect(await sensitiveInPatch(wt, ['notes.txt'])).toEqual(['the patch adds a hard link (2 names for one file): notes.txt']);
  });

  it('attack: the patch adds a sensitive file, here or in a subfolder', () => {
    expect(sensitiveFindings([{ path: '.env', links: 1 }, { path: 'deploy/id_ed25519', links: 1 }, { path: 'config/prod.pem' }])).toHaveLength(3);
  });

  it('control: an ordinary new file, a copy (not a link) of some text, a deleted file and .env.example pass', async () => {
    const wt = mkdtempSync(join(tmpdir(), 'kiln-wt-'));
    writeFileSync(join(wt, 'notes.txt'), 'API_SECRET=<your key>\n');
    writeFileSync(join(wt, '.env.example'), 'API_SECRET=\n');
    expect(await sensitiveInPatch(wt, ['notes.txt', '.env.example', 'gone.txt'])).toEqual([]);
  });

  it("control: a file the user's policy allows as non-sensitive passes", () => {
    expect(sensitiveFindings([{ path: 'fixtures/test.pem', links: 1 }], { sensitive: [], allowSensitive: ['fixtures/**'] })).toEqual([]);
  });
});
