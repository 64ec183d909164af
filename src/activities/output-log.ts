/**
 * A command's full output, redacted and streamed to outputs/<id>.log as it arrives, up to a cap:
 * the model and history see a bounded excerpt, the log keeps the rest (measured: a command that
 * printed 50 MB kept 1 MB while the model was told "the full output is in the log").
 */
import { closeSync, createWriteStream, mkdirSync, openSync, writeSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { redact } from '../redact/index.js';
import { settingsFrom } from '../settings.js';
import { SYNC_IO_MAX_BYTES } from '../store/sync-io.js';

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

/**
 * The log's bytes, each in the file as soon as it arrived, as a stream writes them. The first
 * SYNC_IO_MAX_BYTES go with the synchronous call (most commands print less: the log then costs
 * no trip through the thread pool); past them a stream on the same fd takes the rest, after them.
 */
class LogFile {
  private stream: WriteStream | undefined;
  private written = 0;
  failed: Error | undefined;

  constructor(
    private readonly fd: number | undefined,
    failed?: Error,
  ) {
    this.failed = failed;
  }

  write(text: string): void {
    if (this.failed || this.fd === undefined) return;
    const bytes = Buffer.from(text);
    if (!this.stream && this.written + bytes.length <= SYNC_IO_MAX_BYTES) {
      try {
        for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at, bytes.length - at);
        this.written += bytes.length;
      } catch (err) {
        this.failed = err as Error;
      }
      return;
    }
    if (!this.stream) {
      this.stream = createWriteStream('', { fd: this.fd });
      this.stream.on('error', (err) => (this.failed ??= err));
    }
    this.stream.write(bytes);
  }

  async end(): Promise<void> {
    const stream = this.stream;
    if (stream) return new Promise<void>((resolve) => stream.end(() => resolve()));
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch (err) {
      this.failed ??= err as Error;
    }
  }
}

/**
 * A log whose file cannot be opened (a full disk) is said so when it closes, and the command runs
 * all the same; its directory is made when missing, and a failure to make it is the caller's.
 */
function openLogFile(file: string): LogFile {
  const open = () => {
    try {
      return new LogFile(openSync(file, 'w'));
    } catch (err) {
      return new LogFile(undefined, err as Error);
    }
  };
  const log = open();
  if ((log.failed as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') return log;
  mkdirSync(dirname(file), { recursive: true });
  return open();
}

export async function openOutputLog(file: string, rel: string, header: string, cap: number): Promise<OutputLog> {
  const out = openLogFile(file);
  let seen = 0;
  let kept = 0;
  out.write(header);
  return {
    write(chunk) {
      const clean = redact(chunk);
      const bytes = Buffer.byteLength(clean);
      seen += bytes;
      if (out.failed || kept >= cap) return;
      const room = cap - kept;
      const piece = bytes <= room ? clean : Buffer.from(clean).subarray(0, room).toString('utf8');
      kept += Buffer.byteLength(piece);
      out.write(piece);
    },
    async close(trailer) {
      const cut = seen - kept;
      if (cut > 0) out.write(`\n[kiln: log cap of ${cap} bytes reached (KILN_OUTPUT_LOG_MAX_BYTES); the last ${cut} of ${seen} bytes were not kept]\n`);
      out.write(trailer);
      await out.end();
      const failed = out.failed;
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
