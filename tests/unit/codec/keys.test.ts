import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadKeyring } from '../../../src/codec/keys.js';

const b64 = () => randomBytes(32).toString('base64');
function keysFile(content: unknown): string {
  const f = join(mkdtempSync(join(tmpdir(), 'kiln-keys-')), 'keys.json');
  writeFileSync(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
}

describe('loadKeyring', () => {
  it('is off when nothing is configured', async () => {
    expect(await loadKeyring({})).toBeUndefined();
  });

  it('reads a keyring file with its active key', async () => {
    const r = await loadKeyring({ KILN_CODEC_KEYS_FILE: keysFile({ active: 'k2', keys: { k1: b64(), k2: b64() } }) });
    expect(r?.active).toBe('k2');
    expect([...r!.keys.keys()]).toEqual(['k1', 'k2']);
    expect(r!.keys.get('k1')!.length).toBe(32);
  });

  it('reads one key from the environment, which needs its id', async () => {
    const key = b64();
    expect((await loadKeyring({ KILN_CODEC_KEY: key, KILN_CODEC_KEY_ID: 'prod-1' }))?.active).toBe('prod-1');
    await expect(loadKeyring({ KILN_CODEC_KEY: key })).rejects.toThrow(/without KILN_CODEC_KEY_ID/);
  });

  it.each([
    [{ active: 'k1', keys: { k1: 'x' } }, /key "k1" must be 32 bytes in base64/],
    [{ active: 'k3', keys: { k1: randomBytes(32).toString('base64') } }, /active key "k3" is not among its keys/],
    [{ active: 'k1', keys: { k1: randomBytes(16).toString('base64') } }, /must be 32 bytes/],
    [{ keys: {} }, /active: missing/],
    ['{not json', /KILN_CODEC_KEYS_FILE .*keys\.json/],
  ])('refuses a bad keyring file with what to fix: %j', async (content, why) => {
    await expect(loadKeyring({ KILN_CODEC_KEYS_FILE: keysFile(content) })).rejects.toThrow(why);
  });

  it('refuses a missing file and two sources at once', async () => {
    await expect(loadKeyring({ KILN_CODEC_KEYS_FILE: '/nonexistent/keys.json' })).rejects.toThrow(/no such file/);
    await expect(loadKeyring({ KILN_CODEC_KEYS_FILE: keysFile({ active: 'a', keys: { a: b64() } }), KILN_CODEC_KEY: b64() })).rejects.toThrow(/keep one/);
  });
});
