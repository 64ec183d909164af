/**
 * The SDK's Runtime logs every worker state change (and Core's gRPC retries) to stderr; inside
 * `kiln run`/`demo`/`dev` that noise buries the live view. The CLI installs a Runtime that logs
 * at KILN_LOG_LEVEL (default ERROR) before it creates any worker.
 */
import { connect } from 'node:net';
import { DefaultLogger, Runtime, makeTelemetryFilterString, type LogLevel } from '@temporalio/worker';
import { temporalSettings } from './connection.js';
import { exporterError, prometheusExporter } from './metrics.js';
import { CollapsingLogger } from './collapsing-logger.js';
import { UsageError } from '../shared/errors.js';
import { settingsFrom } from '../settings.js';

let installed = false;

/** `metrics`: host:port for the Prometheus exporter (`kiln worker --metrics`), off when absent. */
export function installQuietRuntime(dflt: LogLevel = 'ERROR', env: NodeJS.ProcessEnv = process.env, metrics?: string): void {
  if (installed) return;
  installed = true;
  const level: LogLevel = settingsFrom(env).logLevel ?? dflt;
  // a bad address is the user's to fix, not a Runtime that already exists
  const exporter = metrics ? prometheusExporter(metrics) : undefined;
  try {
    Runtime.install({
      logger: new CollapsingLogger(new DefaultLogger(level), {
        address: temporalSettings(env).address,
        reachable: () => answers(temporalSettings(env).address),
      }),
      // Core's own logs go through the same logger instead of straight to the console
      telemetryOptions: {
        logging: { filter: makeTelemetryFilterString({ core: level, other: level }), forward: {} },
        ...(exporter ? { metrics: exporter } : {}),
      },
    });
  } catch (err) {
    // the exporter could not listen: the user's to fix, not to run without
    if (metrics && exporterError(metrics, err) instanceof UsageError) throw exporterError(metrics, err);
    // a Runtime already exists in this process (a test, or an embedding program): keep it
  }
}

/** Whether something accepts TCP connections at host:port (the server is back). */
function answers(address: string): Promise<boolean> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '') || '127.0.0.1';
  return new Promise((resolve) => {
    const s = connect({ host, port: Number(address.slice(i + 1)) });
    s.setTimeout(1500, () => (s.destroy(), resolve(false)));
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}
