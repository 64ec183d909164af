/**
 * Fleet gauges: how many open runs are in each phase and how many wait for a person, as the
 * server's visibility store counts them. The workflow's counters (entered − left, summed over
 * workers) go wrong when a host dies — its series vanish from the scrape — or a run is ended from
 * outside; a count of the runs themselves does not. Cost is bounded: one CountWorkflowExecutions
 * per phase plus one, one after the other, every interval, on workers that export metrics only.
 * (A GROUP BY would be one call, but visibility groups by ExecutionStatus only.)
 */
import type { MetricMeter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { Phase } from '../shared/types.js';
import { ALL_PHASES } from '../workflows/machine.js';

export const DEFAULT_FLEET_INTERVAL_MS = 30_000;

export interface FleetCounts {
  phases: Record<Phase, number>;
  /** open runs with at least one tool call waiting for a person */
  waiting: number;
}

/** Both the client's Connection and the worker's NativeConnection have one. */
interface HasWorkflowService {
  workflowService: Pick<temporal.api.workflowservice.v1.WorkflowService, 'countWorkflowExecutions'>;
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The visibility queries, also usable with `temporal workflow count --query`. */
export function fleetQueries(taskQueue: string): { phase: (p: Phase) => string; waiting: string } {
  const open = `WorkflowType = 'kilnRun' AND ExecutionStatus = 'Running' AND TaskQueue = ${quote(taskQueue)}`;
  return { phase: (p) => `${open} AND KilnPhase = ${quote(p)}`, waiting: `${open} AND KilnWaitingSince IS NOT NULL` };
}

export async function countFleet(connection: HasWorkflowService, namespace: string, taskQueue: string): Promise<FleetCounts> {
  const q = fleetQueries(taskQueue);
  const count = async (query: string) => Number((await connection.workflowService.countWorkflowExecutions({ namespace, query })).count ?? 0);
  const phases = {} as Record<Phase, number>;
  // one at a time: a scrape interval is long, a burst of queries on the visibility store is not free
  for (const p of ALL_PHASES) phases[p] = await count(q.phase(p));
  return { phases, waiting: await count(q.waiting) };
}

export interface FleetGauges {
  /** the first count done (or failed): a test waits on it */
  first: Promise<void>;
  /** count now, without waiting for the interval */
  refresh(): Promise<void>;
  stop(): void;
}

/**
 * Sets kiln_runs{phase}, kiln_runs_waiting_for_approval and kiln_fleet_counted_at_seconds every
 * interval. A failed count leaves the last values and the timestamp as they were (so an alert on
 * the timestamp's age sees it) and is said once until a count works again.
 */
export function startFleetGauges(o: {
  connection: HasWorkflowService;
  meter: MetricMeter;
  namespace: string;
  taskQueue: string;
  intervalMs?: number;
  log: (line: string) => void;
}): FleetGauges {
  const tags = { namespace: o.namespace, taskQueue: o.taskQueue };
  const runs = o.meter.createGauge('kiln_runs', 'int', 'runs', 'open runs in each phase, counted by the server (visibility)').withTags(tags);
  const waiting = o.meter
    .createGauge('kiln_runs_waiting_for_approval', 'int', 'runs', 'open runs with a tool call waiting for a person, counted by the server')
    .withTags(tags);
  const countedAt = o.meter.createGauge('kiln_fleet_counted_at_seconds', 'int', 's', 'when kiln_runs was last counted (Unix time)').withTags(tags);
  let failing = false;
  let running: Promise<void> | undefined;
  const refresh = () =>
    (running ??= (async () => {
      try {
        const c = await countFleet(o.connection, o.namespace, o.taskQueue);
        for (const p of ALL_PHASES) runs.set(c.phases[p], { phase: p });
        waiting.set(c.waiting);
        countedAt.set(Math.floor(Date.now() / 1000));
        if (failing) o.log('fleet gauges: counting again');
        failing = false;
      } catch (err) {
        if (!failing) o.log(`fleet gauges: the count failed (kiln_runs keeps its last values until it works): ${(err as Error).message}`);
        failing = true;
      } finally {
        running = undefined;
      }
    })());
  const first = refresh();
  const timer = setInterval(() => void refresh(), o.intervalMs ?? DEFAULT_FLEET_INTERVAL_MS);
  timer.unref();
  return { first, refresh, stop: () => clearInterval(timer) };
}
