/**
 * The worker's log, as a person reads it. Core warns on every retried gRPC call while the server
 * is away (a 30 s outage printed ~570 lines): that becomes one line when contact is lost and one
 * when it is back, the details at DEBUG. And the host-queue worker has activities only, by design,
 * so the SDK's "No workflows registered" warning at each start says nothing and goes to DEBUG;
 * a blocked run fails its workflow on purpose, so the SDK's "Workflow failed" for it is INFO.
 */
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import { RUN_NOT_ACHIEVED } from '../shared/constants.js';

/** Core's and the SDK's words for "the server did not answer" */
const UNREACHABLE = /gRPC call .* retried \d+ times|Network error while|tcp connect error|Connection refused|transport error|Unavailable/i;
const EXPECTED = /^No workflows registered, not polling for workflow tasks$/;

export interface CollapsingOptions {
  /** where the server is, for the "lost contact" line */
  address: string;
  /** resolves true once the server answers again; polled while contact is lost */
  reachable: () => Promise<boolean>;
  /** how often to look for the server while it is gone */
  probeMs?: number;
}

export class CollapsingLogger implements Logger {
  private lost = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly inner: Logger,
    private readonly o: CollapsingOptions,
  ) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (EXPECTED.test(message)) return void this.inner.debug(message, meta);
    // a blocked run ends the workflow as failed on purpose; the run's own output says why
    if (message === 'Workflow failed' && (meta?.error as { type?: string } | undefined)?.type === RUN_NOT_ACHIEVED) return void this.inner.info(message, meta);
    if ((level === 'WARN' || level === 'ERROR') && UNREACHABLE.test(`${message} ${String(meta?.error ?? '')}`)) {
      if (!this.lost) {
        this.lost = true;
        this.inner.warn(`lost contact with the Temporal server at ${this.o.address}; retrying (one line when it is back; details at KILN_LOG_LEVEL=DEBUG)`);
        this.watch();
      }
      return void this.inner.debug(message, meta);
    }
    this.inner.log(level, message, meta);
  }

  trace(m: string, meta?: LogMetadata): void {
    this.log('TRACE', m, meta);
  }
  debug(m: string, meta?: LogMetadata): void {
    this.log('DEBUG', m, meta);
  }
  info(m: string, meta?: LogMetadata): void {
    this.log('INFO', m, meta);
  }
  warn(m: string, meta?: LogMetadata): void {
    this.log('WARN', m, meta);
  }
  error(m: string, meta?: LogMetadata): void {
    this.log('ERROR', m, meta);
  }

  private watch(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      void this.o.reachable().then((up) => {
        if (!up || !this.lost) return;
        this.lost = false;
        clearInterval(this.timer);
        this.timer = undefined;
        this.inner.warn(`contact with the Temporal server at ${this.o.address} is back`);
      });
    }, this.o.probeMs ?? 2000);
    this.timer.unref();
  }
}
