/**
 * Kiln's own Prometheus metrics, emitted through the SDK's workflow metric meter: the worker
 * exports them with the SDK's on one endpoint, and the meter is silent while a workflow replays,
 * so a run rebuilt on another worker does not count its turns twice. Recording a metric issues no
 * command, so these calls change no history. Names and meanings: docs/metrics.md.
 */
import { metricMeter } from '@temporalio/workflow';
import type { Phase, Usage } from '../shared/types.js';

// created on first use: the meter exists only inside a workflow context, not at bundle load
let m:
  | {
      entered: ReturnType<typeof metricMeter.createCounter>;
      left: ReturnType<typeof metricMeter.createCounter>;
      turns: ReturnType<typeof metricMeter.createCounter>;
      tokens: ReturnType<typeof metricMeter.createCounter>;
      cost: ReturnType<typeof metricMeter.createHistogram>;
      asked: ReturnType<typeof metricMeter.createCounter>;
      answered: ReturnType<typeof metricMeter.createCounter>;
      denials: ReturnType<typeof metricMeter.createCounter>;
    }
  | undefined;

function meters() {
  m ??= {
    entered: metricMeter.createCounter('kiln_run_phase_entered', 'runs', 'runs that entered a phase (runs in a phase now: the kiln_runs gauge)'),
    left: metricMeter.createCounter('kiln_run_phase_left', 'runs', 'runs that left a phase'),
    turns: metricMeter.createCounter('kiln_turns', 'turns', 'model turns completed'),
    tokens: metricMeter.createCounter('kiln_tokens', 'tokens', 'model tokens by kind (input, output, cache_read, cache_write)'),
    cost: metricMeter.createHistogram('kiln_turn_cost_usd', 'float', 'USD', "each model turn's cost; the _sum is the total spent"),
    asked: metricMeter.createCounter(
      'kiln_approvals_requested',
      'approvals',
      'tool calls that waited for a person (waiting now: kiln_runs_waiting_for_approval)',
    ),
    answered: metricMeter.createCounter('kiln_approvals_ended', 'approvals', 'approval waits that ended, by outcome (approved, rejected, timeout, cancelled)'),
    denials: metricMeter.createCounter('kiln_tool_denials', 'calls', 'tool calls the policy denied, by tool and rule'),
  };
  return m;
}

export function phaseChanged(from: Phase | undefined, to: Phase): void {
  if (from === to) return;
  if (from) meters().left.add(1, { phase: from });
  meters().entered.add(1, { phase: to });
}

export function turnDone(usage: Usage, costUsd: number): void {
  const x = meters();
  x.turns.add(1);
  x.tokens.add(usage.input, { kind: 'input' });
  x.tokens.add(usage.output, { kind: 'output' });
  x.tokens.add(usage.cacheRead, { kind: 'cache_read' });
  x.tokens.add(usage.cacheWrite, { kind: 'cache_write' });
  x.cost.record(Math.max(0, costUsd));
}

export function approvalRequested(tool: string): void {
  meters().asked.add(1, { tool });
}

export function approvalEnded(tool: string, outcome: 'approved' | 'rejected' | 'timeout' | 'cancelled'): void {
  meters().answered.add(1, { tool, outcome });
}

export function toolDenied(tool: string, rule: string): void {
  meters().denials.add(1, { tool, rule });
}
