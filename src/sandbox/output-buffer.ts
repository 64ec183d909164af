import { StringDecoder } from 'node:string_decoder';
import { createStreamRedactor } from '../redact/stream.js';

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * Keeps the first and last halves of a command's output within a byte budget: the head shows how
 * a build started, the tail shows the error it ended with; the middle of a 5 MB log rarely matters.
 */
export class CappedOutput {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  // redacted before the cut: a secret split between head and tail would leave fragments no rule knows
  private readonly decoder = new StringDecoder('utf8');
  private readonly redactor = createStreamRedactor();
  totalBytes = 0;

  constructor(maxBytes: number) {
    const max = Math.max(0, Math.floor(maxBytes));
    this.headLimit = Math.ceil(max / 2);
    this.tailLimit = max - this.headLimit;
  }

  push(raw: Buffer): void {
    const text = this.redactor.push(this.decoder.write(raw));
    if (text) this.keep(Buffer.from(text, 'utf8'));
  }

  private keep(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailLimit === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    // Drop whole chunks from the front while the rest still covers the tail budget.
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.tailLimit) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  get truncated(): boolean {
    return this.totalBytes > this.headBytes + Math.min(this.tailBytes, this.tailLimit);
  }

  text(): string {
    const rest = this.redactor.push(this.decoder.end()) + this.redactor.end();
    if (rest) this.keep(Buffer.from(rest, 'utf8'));
    const head = Buffer.concat(this.head);
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.tailLimit) tail = tail.subarray(tail.length - this.tailLimit);
    const cut = this.totalBytes - head.length - tail.length;
    if (cut <= 0) return Buffer.concat([head, tail]).toString('utf8');
    const marker = `\n[... kiln: ${cut} bytes of output cut (${this.totalBytes} in all); head and tail kept ...]\n`;
    return head.toString('utf8') + marker + tail.toString('utf8');
  }
}

/**
 * Turns raw chunks into text chunks that end on line boundaries where possible, so a live view or
 * a heartbeat never shows half a line; a line longer than maxPending is flushed as is.
 */
export class LineChunker {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  constructor(
    private readonly emit: (chunk: string) => void,
    private readonly maxPending = 64 * 1024,
  ) {}

  push(chunk: Buffer): void {
    this.pending += this.decoder.write(chunk);
    const lastNewline = this.pending.lastIndexOf('\n');
    if (lastNewline >= 0) {
      const ready = this.pending.slice(0, lastNewline + 1);
      this.pending = this.pending.slice(lastNewline + 1);
      this.safeEmit(ready);
    }
    if (this.pending.length > this.maxPending) {
      const ready = this.pending;
      this.pending = '';
      this.safeEmit(ready);
    }
  }

  end(): void {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    if (rest) this.safeEmit(rest);
  }

  // A broken listener must not break the command run (a command never throws into the loop).
  private safeEmit(chunk: string): void {
    try {
      this.emit(chunk);
    } catch {
      /* ignored on purpose */
    }
  }
}
