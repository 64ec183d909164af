/** A server outage is two lines in the worker's log, not one per retried gRPC call. */
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { CollapsingLogger } from '../../../src/temporal/collapsing-logger.js';

class Recorder implements Logger {
  lines: Array<[LogLevel, string]> = [];
  log(level: LogLevel, m: string): void {
    this.lines.push([level, m]);
  }
  trace(m: string) {
    this.log('TRACE', m);
  }
  debug(m: string) {
    this.log('DEBUG', m);
  }
  info(m: string) {
    this.log('INFO', m);
  }
  warn(m: string) {
    this.log('WARN', m);
  }
  error(m: string) {
    this.log('ERROR', m);
  }
}

const RETRY_META: LogMetadata = { sdkComponent: 'core', error: 'Status { code: Unavailable, message: "tcp connect error" }' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the worker log during a server outage', () => {
  it('one line when contact is lost, the retries at DEBUG, one line when it is back', async () => {
    const inner = new Recorder();
    let up = false;
    const log = new CollapsingLogger(inner, { address: '127.0.0.1:7233', reachable: async () => up, probeMs: 20 });
    for (let i = 5; i < 200; i++) log.warn(`gRPC call poll_activity_task_queue retried ${i} times`, RETRY_META);
    log.warn('Network error while describing namespace for heartbeat capabilities', RETRY_META);
    const shown = () => inner.lines.filter(([l]) => l !== 'DEBUG').map(([, m]) => m);
    expect(shown()).toEqual(['lost contact with the Temporal server at 127.0.0.1:7233; retrying (one line when it is back; details at KILN_LOG_LEVEL=DEBUG)']);
    expect(inner.lines.filter(([l]) => l === 'DEBUG')).toHaveLength(196);
    await sleep(80);
    expect(shown()).toHaveLength(1);
    up = true;
    await sleep(80);
    expect(shown().at(-1)).toBe('contact with the Temporal server at 127.0.0.1:7233 is back');

    // a second outage is reported again
    log.warn('gRPC call poll_workflow_task_queue retried 5 times', RETRY_META);
    expect(shown().at(-1)).toMatch(/^lost contact/);
    up = true;
    await sleep(80);
    expect(shown()).toHaveLength(4);
  });

  it('the host-queue worker has no workflows by design (DEBUG); the failed workflow of a blocked run is INFO; other warnings stay', () => {
    const inner = new Recorder();
    const log = new CollapsingLogger(inner, { address: 'x:1', reachable: async () => true });
    log.warn('No workflows registered, not polling for workflow tasks', { sdkComponent: 'worker' });
    log.warn('Workflow failed', { error: Object.assign(new Error('blocked: abandoned by carol'), { type: 'KilnRunNotAchieved' }) });
    log.warn('Workflow failed', { error: Object.assign(new Error('boom'), { type: 'Error' }) });
    log.warn('Activity failed to heartbeat');
    log.error('Worker failed', { error: 'bundle error' });
    expect(inner.lines).toEqual([
      ['DEBUG', 'No workflows registered, not polling for workflow tasks'],
      ['INFO', 'Workflow failed'],
      ['WARN', 'Workflow failed'],
      ['WARN', 'Activity failed to heartbeat'],
      ['ERROR', 'Worker failed'],
    ]);
  });
});
