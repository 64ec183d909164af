/**
 * The worker's Prometheus endpoint: the SDK's own metrics (task latencies, slots, polls) and
 * Kiln's (emitted through the SDK's metric meter, so one endpoint serves both; docs/metrics.md).
 */
import { Runtime, type MetricsExporterConfig } from '@temporalio/worker';
import { UsageError } from '../shared/errors.js';

/**
 * Kiln's cost histogram holds dollars, not the milliseconds Core's default buckets are for.
 * (Core's `temporal_` prefix is for its own metrics; Kiln's keep their names.)
 */
const KILN_BUCKETS: Record<string, number[]> = {
  kiln_turn_cost_usd: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
};

/** `host:port` for the exporter to listen on; refuses what would fail deep inside Core. */
export function metricsAddress(addr: string, flag = 'KILN_METRICS_ADDR'): string {
  const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(addr.trim());
  if (!m || Number(m[2]) > 65535) throw new UsageError(`${flag} ${JSON.stringify(addr)}: expected host:port, e.g. 127.0.0.1:9464`);
  return addr.trim();
}

export function prometheusExporter(addr: string): MetricsExporterConfig {
  return { prometheus: { bindAddress: metricsAddress(addr), histogramBucketOverrides: KILN_BUCKETS } };
}

/**
 * A Runtime with the Prometheus exporter, installed before any connection (the Runtime is per
 * process and fixed once created). Returns the address, or undefined when metrics are off.
 */
export function installMetricsRuntime(addr: string | undefined): string | undefined {
  if (!addr?.trim()) return undefined;
  try {
    Runtime.install({ telemetryOptions: { metrics: prometheusExporter(addr) } });
  } catch (err) {
    throw exporterError(addr, err);
  }
  return addr.trim();
}

/** Core's bind failure ("Address already in use") as one line that says which flag to change. */
export function exporterError(addr: string, err: unknown): Error {
  const msg = (err as Error).message ?? String(err);
  return /prometheus/i.test(msg) ? new UsageError(`metrics at ${addr}: ${msg.replace(/^.*?: /, '')}: pick another address`) : (err as Error);
}

export function metricsStatus(addr: string | undefined): string {
  return addr ? `metrics: Prometheus at http://${addr}/metrics` : 'metrics: off (kiln worker --metrics 127.0.0.1:9464, or KILN_METRICS_ADDR)';
}
