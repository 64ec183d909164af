/**
 * The payload codec's keys: a keyring file (KILN_CODEC_KEYS_FILE) or one key in the environment
 * (KILN_CODEC_KEY with KILN_CODEC_KEY_ID). Rotation is a new key made active in the file: the old
 * ones stay to decrypt the histories written under them.
 */
import { z } from 'zod';
import { KilnInputError } from '../shared/errors.js';
import { loadJsonFile } from '../shared/zod-error.js';
import { settingsFrom } from '../settings.js';

/** AES-256: a key is 32 bytes, written as base64. */
const KEY_BYTES = 32;

export interface Keyring {
  /** the key id new payloads are encrypted with */
  active: string;
  keys: ReadonlyMap<string, Buffer>;
}

/** A keyring that is missing, malformed or asks for a key it does not hold: say what to fix. */
export class CodecKeyError extends KilnInputError {}

const ID = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'a key id is 1–64 letters, digits, ".", "_" or "-"');
const FILE = z.strictObject({ active: ID, keys: z.record(ID, z.string()) });

function decodeKey(id: string, b64: string, where: string): Buffer {
  const key = Buffer.from(b64.trim(), 'base64');
  // Buffer.from ignores what is not base64; a round trip tells a typo from a key
  if (key.length !== KEY_BYTES || key.toString('base64').replace(/=+$/, '') !== b64.trim().replace(/=+$/, '')) {
    throw new CodecKeyError(`${where}: key "${id}" must be ${KEY_BYTES} bytes in base64 (make one with \`openssl rand -base64 32\`)`);
  }
  return key;
}

/** The configured keyring, or undefined when no key is configured (payloads then stay as they are). */
export async function loadKeyring(env: NodeJS.ProcessEnv = process.env): Promise<Keyring | undefined> {
  const { codecKeysFile: file, codecKey: key, codecKeyId } = settingsFrom(env);
  if (file && key) throw new CodecKeyError('both KILN_CODEC_KEYS_FILE and KILN_CODEC_KEY are set: keep one (the file holds every key, for rotation)');
  if (file) {
    const where = `KILN_CODEC_KEYS_FILE ${file}`;
    const parsed = await loadJsonFile(file, FILE, (problem) => new CodecKeyError(`${where}: ${problem}`));
    if (!(parsed.active in parsed.keys)) throw new CodecKeyError(`${where}: active key "${parsed.active}" is not among its keys`);
    const keys = new Map(Object.entries(parsed.keys).map(([id, b64]) => [id, decodeKey(id, b64, where)]));
    return { active: parsed.active, keys };
  }
  if (key) {
    const id = codecKeyId;
    if (!id)
      throw new CodecKeyError('KILN_CODEC_KEY is set without KILN_CODEC_KEY_ID: name the key (the id is stored with every payload, so rotation can find it)');
    const ok = ID.safeParse(id);
    if (!ok.success) throw new CodecKeyError(`KILN_CODEC_KEY_ID ${JSON.stringify(id)}: ${ok.error.issues[0]!.message}`);
    return { active: id, keys: new Map([[id, decodeKey(id, key, 'KILN_CODEC_KEY')]]) };
  }
  return undefined;
}
