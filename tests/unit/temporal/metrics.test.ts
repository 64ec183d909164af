import { describe, expect, it } from 'vitest';
import { metricsAddress, prometheusExporter } from '../../../src/temporal/metrics.js';

describe('the metrics address', () => {
  it('takes host:port', () => {
    expect(metricsAddress('127.0.0.1:9464')).toBe('127.0.0.1:9464');
    expect(metricsAddress('[::1]:9464')).toBe('[::1]:9464');
    expect(prometheusExporter('0.0.0.0:9464')).toMatchObject({ prometheus: { bindAddress: '0.0.0.0:9464' } });
  });

  it.each(['9464', 'http://127.0.0.1:9464', '127.0.0.1:99999', ''])('refuses %j with an example', (bad) => {
    expect(() => metricsAddress(bad, '--metrics')).toThrow(/--metrics .*expected host:port, e.g. 127.0.0.1:9464/);
  });
});
