/**
 * The SDK's Runtime logs every worker state change (and Core's gRPC retries) to stderr; inside
 * `kiln run`/`demo`/`dev` that noise buries the live view. The CLI installs a Runtime that logs
 * at KILN_LOG_LEVEL (default ERROR) before it creates any worker.
 */
import { DefaultLogger, Runtime, makeTelemetryFilterString, type LogLevel } from '@temporalio/worker';

const LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];
let installed = false;

export function installQuietRuntime(dflt: LogLevel = 'ERROR', env: NodeJS.ProcessEnv = process.env): void {
  if (installed) return;
  installed = true;
  const wanted = (env.KILN_LOG_LEVEL ?? '').toUpperCase() as LogLevel;
  const level = LEVELS.includes(wanted) ? wanted : dflt;
  try {
    Runtime.install({
      logger: new DefaultLogger(level),
      // Core's own logs go through the same logger instead of straight to the console
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level, other: level }), forward: {} } },
    });
  } catch {
    // a Runtime already exists in this process (a test, or an embedding program): keep it
  }
}
