/**
 * Encrypted history: every payload (workflow input, activity arguments and results, failure
 * messages) is sealed with AES-256-GCM before it reaches Temporal. The key id travels in the
 * payload's metadata, so decrypting picks the key the payload was written with and a rotated
 * keyring still reads old histories.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
// CommonJS: Node's ESM loader finds no named exports in it
import proto from '@temporalio/proto';
import { CodecKeyError, type Keyring } from './keys.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

/** The key id an encrypted payload names, or undefined for a payload that is not encrypted. */
export function encryptedWith(p: Payload): string | undefined {
  if (text(p.metadata?.encoding) !== ENCRYPTED_ENCODING) return undefined;
  return text(p.metadata?.[KEY_ID_METADATA]) ?? '(none)';
}

export class AesGcmCodec implements PayloadCodec {
  constructor(private readonly keyring: Keyring) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const id = this.keyring.active;
    const key = this.keyring.keys.get(id)!;
    return payloads.map((p) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      // the key id is authenticated too: a payload relabelled with another id does not decrypt
      cipher.setAAD(Buffer.from(id));
      const plain = proto.temporal.api.common.v1.Payload.encode(p).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(id) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const id = encryptedWith(p);
      // histories written before encryption was turned on stay readable
      if (id === undefined) return p;
      const key = this.keyring.keys.get(id);
      if (!key) {
        throw new CodecKeyError(
          `payload encrypted with key "${id}", which this keyring does not hold (it has ${[...this.keyring.keys.keys()].join(', ')}): add it to KILN_CODEC_KEYS_FILE`,
        );
      }
      const data = Buffer.from(p.data ?? []);
      if (data.length < IV_BYTES + TAG_BYTES) throw new CodecKeyError(`payload encrypted with key "${id}" is truncated (${data.length} bytes)`);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      let plain: Buffer;
      try {
        plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new CodecKeyError(`payload encrypted with key "${id}" failed authentication: it was altered, or key "${id}" is not the key it was written with`);
      }
      return proto.temporal.api.common.v1.Payload.decode(plain);
    });
  }
}

/**
 * A process with no keys that meets an encrypted payload says so, instead of the SDK's "Unknown
 * encoding"; payloads that are not encrypted pass as they are.
 */
export class NoKeysCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const p of payloads) {
      const id = encryptedWith(p);
      if (id !== undefined) {
        throw new CodecKeyError(
          `payload encrypted with key "${id}", but no codec keys are configured here: set KILN_CODEC_KEYS_FILE (or KILN_CODEC_KEY and KILN_CODEC_KEY_ID) as the other Kiln processes have it`,
        );
      }
    }
    return payloads;
  }
}
