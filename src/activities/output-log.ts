/**
 * A command's full output, redacted and streamed to outputs/<id>.log as it arrives, up to a cap:
 * the model and history see a bounded excerpt, the log keeps the rest (measured: a command that
 * printed 50 MB kept 1 MB while the model was told "the full output is in the log").
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { redact } from '../redact/index.js';
import { settingsFrom } from '../settings.js';

/** Default cap of one command's log: KILN_OUTPUT_LOG_MAX_BYTES overrides it (documented in the README). */
export const DEFAULT_OUTPUT_LOG_MAX_BYTES = 64 * 1024 * 1024;

export function outputLogCap(env: NodeJS.ProcessEnv): number {
  return Math.floor(settingsFrom(env).outputLogMaxBytes ?? DEFAULT_OUTPUT_LOG_MAX_BYTES);
}

export interface OutputLog {
  /** a line-aligned chunk of output (the sandbox's onOutput) */
  write(chunk: string): void;
  /** ends the log; says truthfully what it kept */
  close(trailer: string): Promise<{ keptAll: boolean; note: string }>;
}

export async function openOutputLog(file: string, rel: string, header: string, cap: number): Promise<OutputLog> {
  await mkdir(dirname(file), { recursive: true });
  const out = createWriteStream(file);
  let failed: Error | undefined;
  out.on('error', (err) => (failed ??= err));
  let seen = 0;
  let kept = 0;
  out.write(header);
  return {
    write(chunk) {
      const clean = redact(chunk);
      const bytes = Buffer.byteLength(clean);
      seen += bytes;
      if (failed || kept >= cap) return;
      const room = cap - kept;
      const piece = bytes <= room ? clean : Buffer.from(clean).subarray(0, room).toString('utf8');
      kept += Buffer.byteLength(piece);
      out.write(piece);
    },
    async close(trailer) {
      const cut = seen - kept;
      if (cut > 0) out.write(`\n[kiln: log cap of ${cap} bytes reached (KILN_OUTPUT_LOG_MAX_BYTES); the last ${cut} of ${seen} bytes were not kept]\n`);
      out.write(trailer);
      await new Promise<void>((resolve) => out.end(() => resolve()));
      if (failed)
        return {
          keptAll: false,
          note: `the output log ${rel} could not be written completely (${failed.message.slice(0, 120)}); ${kept} of ${seen} bytes reached it`,
        };
      if (cut > 0) return { keptAll: false, note: `${rel} keeps the first ${kept} of ${seen} bytes (the log cap)` };
      return { keptAll: true, note: `the full output (${seen} bytes) is in ${rel}` };
    },
  };
}
