import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { AesGcmCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, NoKeysCodec } from '../../../src/codec/aes-gcm.js';
import type { Keyring } from '../../../src/codec/keys.js';

const CANARY = 'canary-7f3a9c-do-not-leak';
const k1 = randomBytes(32);
const k2 = randomBytes(32);
const ring = (active: string, keys: Record<string, Buffer>): Keyring => ({ active, keys: new Map(Object.entries(keys)) });
const payload = (v: unknown) => defaultPayloadConverter.toPayload(v)!;
const value = (p: Payload) => defaultPayloadConverter.fromPayload(p);
const meta = (p: Payload, k: string) => Buffer.from(p.metadata![k]!).toString();

describe('AesGcmCodec', () => {
  it('round-trips a payload and leaves no plaintext in the sealed one', async () => {
    const codec = new AesGcmCodec(ring('k1', { k1 }));
    const [sealed] = await codec.encode([payload({ goal: CANARY })]);
    expect(meta(sealed!, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(meta(sealed!, KEY_ID_METADATA)).toBe('k1');
    expect(Buffer.from(sealed!.data!).includes(CANARY)).toBe(false);
    const [open] = await codec.decode([sealed!]);
    expect(value(open!)).toEqual({ goal: CANARY });
  });

  it('uses a fresh IV for every payload', async () => {
    const codec = new AesGcmCodec(ring('k1', { k1 }));
    const [a, b] = await codec.encode([payload('same'), payload('same')]);
    expect(Buffer.from(a!.data!).subarray(0, 12).equals(Buffer.from(b!.data!).subarray(0, 12))).toBe(false);
  });

  it('attack: a flipped ciphertext byte is refused, naming the key', async () => {
    const codec = new AesGcmCodec(ring('k1', { k1 }));
    const [sealed] = await codec.encode([payload(CANARY)]);
    const data = Buffer.from(sealed!.data!);
    data[20]! ^= 1;
    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow(/key "k1" failed authentication/);
  });

  it('attack: a payload relabelled with another key id is refused', async () => {
    const both = new AesGcmCodec(ring('k1', { k1, k2 }));
    const [sealed] = await both.encode([payload(CANARY)]);
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: Buffer.from('k2') } };
    await expect(both.decode([relabelled])).rejects.toThrow(/key "k2" failed authentication/);
  });

  it('rotation: a new active key writes new payloads while the old ones still decode', async () => {
    const before = new AesGcmCodec(ring('k1', { k1 }));
    const [old] = await before.encode([payload('written under k1')]);
    const after = new AesGcmCodec(ring('k2', { k1, k2 }));
    const [fresh] = await after.encode([payload('written under k2')]);
    expect(meta(fresh!, KEY_ID_METADATA)).toBe('k2');
    expect((await after.decode([old!, fresh!])).map(value)).toEqual(['written under k1', 'written under k2']);
    // the old keyring cannot read what the new key wrote, and says which key it lacks
    await expect(before.decode([fresh!])).rejects.toThrow(/key "k2", which this keyring does not hold \(it has k1\)/);
  });

  it('passes payloads that were never encrypted (histories from before encryption)', async () => {
    const plain = payload({ goal: 'old run' });
    expect((await new AesGcmCodec(ring('k1', { k1 })).decode([plain])).map(value)).toEqual([{ goal: 'old run' }]);
  });
});

describe('NoKeysCodec', () => {
  it('leaves plain payloads alone (control) and refuses an encrypted one by its key id', async () => {
    const plain = payload('plain');
    expect(await new NoKeysCodec().encode([plain])).toEqual([plain]);
    expect(await new NoKeysCodec().decode([plain])).toEqual([plain]);
    const [sealed] = await new AesGcmCodec(ring('k9', { k9: k1 })).encode([plain]);
    await expect(new NoKeysCodec().decode([sealed!])).rejects.toThrow(
      /encrypted with key "k9", but no codec keys are configured here: set KILN_CODEC_KEYS_FILE/,
    );
  });
});
