/** The data converter of every Kiln process (worker, CLI, embedded server): encrypting when keys are configured. */
import type { DataConverter } from '@temporalio/common';
import { createRequire, Module } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AesGcmCodec, NoKeysCodec } from './aes-gcm.js';
import { failureConverter } from './failure-converter.js';
import { loadKeyring, type Keyring } from './keys.js';

/**
 * ./failure-converter in this module's own form (.ts from source, .js built), as the bundler and
 * the SDK load it. Named through `../codec/` and `.js` so that the `kiln run` bundle (a .cjs in
 * dist/src/cli/) names the same compiled file: the SDK requires a path that exists.
 */
export const FAILURE_CONVERTER_PATH = fileURLToPath(
  new URL(`../codec/failure-converter${extname(fileURLToPath(import.meta.url)) === '.ts' ? '.ts' : '.js'}`, import.meta.url),
);

/**
 * The SDK `require()`s failureConverterPath outside the workflow sandbox, which cannot load the .ts
 * source under the tests; Node's require cache (documented as writable) answers it with the module
 * this process already imported, from source or built alike.
 */
function registerFailureConverter(): void {
  const cache = createRequire(import.meta.url).cache;
  if (cache[FAILURE_CONVERTER_PATH]) return;
  const m = new Module(FAILURE_CONVERTER_PATH);
  m.filename = FAILURE_CONVERTER_PATH;
  m.exports = { failureConverter };
  m.loaded = true;
  cache[FAILURE_CONVERTER_PATH] = m;
}

export interface KilnDataConverter {
  dataConverter: DataConverter;
  /** the active key id, or undefined when payloads are not encrypted */
  keyId: string | undefined;
}

/** The converter for a keyring: without one, payloads are untouched and an encrypted one is refused by name. */
export function dataConverterFor(keyring: Keyring | undefined): KilnDataConverter {
  if (!keyring) return { dataConverter: { payloadCodecs: [new NoKeysCodec()] }, keyId: undefined };
  registerFailureConverter();
  return { dataConverter: { payloadCodecs: [new AesGcmCodec(keyring)], failureConverterPath: FAILURE_CONVERTER_PATH }, keyId: keyring.active };
}

export async function kilnDataConverter(env: NodeJS.ProcessEnv = process.env): Promise<KilnDataConverter> {
  return dataConverterFor(await loadKeyring(env));
}

/** One line for the operator at start. */
export function codecStatus(c: KilnDataConverter): string {
  return c.keyId
    ? `history: ENCRYPTED (AES-256-GCM, active key "${c.keyId}"); read runs in the Web UI through \`kiln codec-server\``
    : 'history: not encrypted (set KILN_CODEC_KEYS_FILE to encrypt; docs/encryption.md)';
}
