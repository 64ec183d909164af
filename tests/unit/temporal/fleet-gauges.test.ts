import type { MetricMeter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { fleetQueries, startFleetGauges } from '../../../src/temporal/fleet-gauges.js';
import { ALL_PHASES } from '../../../src/workflows/machine.js';

/** A meter that keeps each gauge's last value per label set. */
function fakeMeter() {
  const values = new Map<string, number>();
  const gauge = (name: string, base: Record<string, string | number | boolean>) => ({
    set(v: number, extra: Record<string, string> = {}) {
      values.set(`${name}${JSON.stringify({ ...base, ...extra })}`, v);
    },
    withTags: (t: Record<string, string>) => gauge(name, { ...base, ...t }),
  });
  const meter = { createGauge: (name: string) => gauge(name, {}) } as unknown as MetricMeter;
  const get = (name: string, extra: Record<string, string> = {}) =>
    values.get(`${name}${JSON.stringify({ namespace: 'default', taskQueue: 'kiln', ...extra })}`);
  return { meter, get };
}

/** counts by query; `down` makes every call fail like an unreachable server */
function fakeServer(counts: Record<string, number>) {
  const s = {
    down: false,
    queries: [] as string[],
    workflowService: {
      async countWorkflowExecutions({ query }: { query?: string | null }) {
        if (s.down) throw Object.assign(new Error('14 UNAVAILABLE: connection refused'), { code: 14 });
        s.queries.push(query!);
        return { count: counts[query!] ?? 0 };
      },
    },
  };
  return s;
}

describe('fleet gauges', () => {
  const q = fleetQueries('kiln');

  it('counts open runs of this task queue per phase, and the waiting ones, with one query each', async () => {
    const server = fakeServer({ [q.phase('editing')]: 3, [q.phase('awaiting_approval')]: 2, [q.waiting]: 2 });
    const { meter, get } = fakeMeter();
    const g = startFleetGauges({ connection: server as never, meter, namespace: 'default', taskQueue: 'kiln', log: () => {} });
    await g.first;
    g.stop();
    expect(get('kiln_runs', { phase: 'editing' })).toBe(3);
    expect(get('kiln_runs', { phase: 'awaiting_approval' })).toBe(2);
    expect(get('kiln_runs', { phase: 'planning' })).toBe(0);
    expect(get('kiln_runs_waiting_for_approval')).toBe(2);
    expect(server.queries).toHaveLength(ALL_PHASES.length + 1);
    expect(q.phase('editing')).toBe("WorkflowType = 'kilnRun' AND ExecutionStatus = 'Running' AND TaskQueue = 'kiln' AND KilnPhase = 'editing'");
    expect(q.waiting).toMatch(/AND KilnWaitingSince IS NOT NULL$/);
  });

  it('a task queue name cannot change the query (its quotes are escaped)', () => {
    expect(fleetQueries("a' OR 'x'='x").waiting).toContain("TaskQueue = 'a\\' OR \\'x\\'=\\'x'");
  });

  it('a failed count keeps the last values and the time of the count, and is said once until counting works again', async () => {
    const server = fakeServer({ [q.phase('editing')]: 1 });
    const { meter, get } = fakeMeter();
    const log: string[] = [];
    const g = startFleetGauges({ connection: server as never, meter, namespace: 'default', taskQueue: 'kiln', log: (l) => log.push(l) });
    await g.first;
    g.stop();
    const at = get('kiln_fleet_counted_at_seconds');
    expect(at).toBeGreaterThan(0);
    server.down = true;
    await g.refresh();
    await g.refresh();
    expect(get('kiln_runs', { phase: 'editing' })).toBe(1);
    expect(get('kiln_fleet_counted_at_seconds')).toBe(at);
    expect(log).toEqual([expect.stringMatching(/^fleet gauges: the count failed .*UNAVAILABLE/)]);
    server.down = false;
    await g.refresh();
    expect(log).toHaveLength(2);
    expect(log[1]).toBe('fleet gauges: counting again');
  });
});
