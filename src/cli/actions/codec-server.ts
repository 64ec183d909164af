/**
 * `kiln codec-server`: the Web UI's remote codec, so people who may read runs see them decrypted
 * in the UI while Temporal stores only ciphertext (docs/encryption.md).
 */
import { AesGcmCodec } from '../../codec/aes-gcm.js';
import { CodecKeyError, loadKeyring } from '../../codec/keys.js';
import { newToken, startCodecServer, type CodecServer } from '../../codec/server.js';
import { UsageError } from '../../shared/errors.js';
import { settings, settingsFrom } from '../../settings.js';

/** `kiln dev`'s Web UI, the one a codec server serves unless told otherwise. */
export const DEV_UI_ORIGIN = 'http://127.0.0.1:8233';

/** `origin`: the Web UI's origin; `kiln dev` also names the other spellings of its own (localhost). */
export async function openCodecServer(o: { port: number; origin: string | string[]; env?: NodeJS.ProcessEnv }): Promise<CodecServer> {
  const env = o.env ?? process.env;
  const origins = [o.origin].flat().map((x) => {
    try {
      return new URL(x).origin;
    } catch {
      throw new UsageError(`--origin ${JSON.stringify(x)}: expected the Web UI's origin, e.g. ${DEV_UI_ORIGIN}`);
    }
  });
  const keyring = await loadKeyring(env);
  if (!keyring) throw new CodecKeyError('no codec keys configured: set KILN_CODEC_KEYS_FILE (or KILN_CODEC_KEY and KILN_CODEC_KEY_ID) as the workers have it');
  const token = settingsFrom(env).codecServerToken ?? newToken();
  return startCodecServer({ codec: new AesGcmCodec(keyring), port: o.port, origins, token });
}

export async function runCodecServer(o: { port: number; origin: string }, out: (s: string) => void): Promise<void> {
  const server = await openCodecServer(o);
  out(`codec server:   ${server.url} (POST /encode, /decode) for the Web UI at ${new URL(o.origin).origin}`);
  if (!settings().codecServerToken) out(`token:          ${server.token}   (set KILN_CODEC_SERVER_TOKEN to choose it)`);
  out(`send:           Authorization: Bearer <token>; a UI without login uses the endpoint ${server.url}/<token>`);
  out(`dev UI:         temporal server start-dev --ui-codec-endpoint ${server.url}/<token>  (kiln dev does this itself when keys are set)`);
  out('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
}
