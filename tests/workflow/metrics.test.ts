/**
 * The worker's Prometheus endpoint after a scripted run: Kiln's counters (emitted through the
 * SDK's workflow metric meter) are there with the run's own numbers, beside the SDK's metrics.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveUpdate } from '../../src/shared/messages.js';
import { outcome } from '../../src/client/runs.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { installMetricsRuntime } from '../../src/temporal/metrics.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { testInput } from '../helpers/run-input.js';
import { workflowTestEnv, type WorkflowTestEnv } from '../helpers/workflow-env.js';

let t: WorkflowTestEnv;
let endpoint: string;
const fleetLog: string[] = [];

/** One metric's value for the labels given (the SDK adds namespace, task_queue, workflow_type). */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(endpoint)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

beforeAll(async () => {
  // the Runtime is per process and must exist before any connection
  const addr = `127.0.0.1:${await freePort()}`;
  installMetricsRuntime(addr);
  endpoint = `http://${addr}/metrics`;
  // a long interval: the test counts when it wants to (refresh), so nothing races its reads
  t = await workflowTestEnv('kiln-metrics-tests', {}, { fleetGauges: { intervalMs: 3_600_000, log: (l) => fleetLog.push(l) } });
});
afterAll(async () => {
  await t?.stop();
});

describe('worker metrics', () => {
  it("counts a scripted run's turns, tokens, cost, denial, approval and phases", async () => {
    const repo = repoWith({
      'notes.txt': 'notes\n',
      '.env': 'TOKEN=1\n',
      'package.json': JSON.stringify({ name: 'm', scripts: { lint: 'node -e 0' } }),
    });
    const script = writeScript(join(repo, '..'), 'metrics', {
      name: 'metrics',
      steps: [
        // .env is a sensitive file: the policy denies the read
        {
          tool_use: [
            { name: 'read_file', input: { path: 'notes.txt' } },
            { name: 'read_file', input: { path: '.env' } },
          ],
        },
        { tool_use: [{ name: 'edit', input: { path: 'notes.txt', old_string: 'notes', new_string: 'notes, read' } }] },
        // a package script is not allowlisted: it waits for a person
        { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'lint' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, allowUnverified: true });
    const h = await t.start(input);
    await t.waitFor(h, (s) => s.pendingApprovals.length > 0);
    // waiting now = requested - ended
    expect(await metric('kiln_approvals_requested', { tool: 'run_command' })).toBe(1);
    expect(await metric('kiln_approvals_ended')).toBe(0);
    expect(await metric('kiln_run_phase_entered', { phase: 'awaiting_approval' })).toBe(1);
    await h.executeUpdate(approveUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'alice' }] });
    const r = await outcome(h);
    expect(r.state, r.reason).toBe('succeeded');
    expect(r.turns).toBe(4);

    expect(await metric('kiln_turns')).toBe(r.turns);
    expect(await metric('kiln_tokens', { kind: 'input' })).toBe(r.tokens.input);
    expect(await metric('kiln_tokens', { kind: 'output' })).toBe(r.tokens.output);
    expect(await metric('kiln_tokens', { kind: 'cache_read' })).toBe(r.tokens.cacheRead);
    expect(await metric('kiln_turn_cost_usd_count')).toBe(r.turns);
    expect(await metric('kiln_turn_cost_usd_sum')).toBeCloseTo(r.costUsd, 6);
    expect(await metric('kiln_tool_denials', { tool: 'read_file', rule: 'path.sensitive' })).toBe(1);
    expect(await metric('kiln_tool_denials')).toBe(1);
    expect(await metric('kiln_approvals_ended', { outcome: 'approved' })).toBe(1);
    // one run: in each phase it passed through, entered once and left once; the last one held
    expect(await metric('kiln_run_phase_entered', { phase: 'succeeded' })).toBe(1);
    expect(await metric('kiln_run_phase_left', { phase: 'succeeded' })).toBe(0);
    expect(await metric('kiln_run_phase_entered', { phase: 'preparing' })).toBe(1);
    expect(await metric('kiln_run_phase_left', { phase: 'preparing' })).toBe(1);
    expect((await metric('kiln_run_phase_entered')) - (await metric('kiln_run_phase_left'))).toBe(1);
    // the budget ledger's gauge: what the tenant was billed, this file's only run so far
    expect(await metric('kiln_budget_billed_usd', { tenant: 'default', scope: 'tenant' })).toBeCloseTo(r.costUsd, 6);
    expect(await metric('kiln_budget_held_usd', { tenant: 'default', scope: 'tenant' })).toBe(0);
    // and the SDK's own metrics on the same endpoint
    expect(await metric('temporal_workflow_completed')).toBeGreaterThanOrEqual(1);
  });

  it("kiln_runs and kiln_runs_waiting_for_approval are the server's count: right where the counters go wrong", async () => {
    const repo = repoWith({ 'notes.txt': 'notes\n', 'package.json': JSON.stringify({ name: 'g', scripts: { lint: 'node -e 0' } }) });
    const script = writeScript(join(repo, '..'), 'gauges', {
      name: 'gauges',
      steps: [
        { tool_use: [{ name: 'run_command', input: { command: 'npm run lint', reason: 'lint' } }] },
        { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
      ],
    });
    const labels = { namespace: 'default', taskQueue: 'kiln-metrics-tests' };
    /** counts again until the gauges say what is expected (visibility is updated a moment after the run) */
    const gaugesReach = async (awaiting: number, waiting: number) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        await t.worker.fleetGauges!.refresh();
        const now = [await metric('kiln_runs', { ...labels, phase: 'awaiting_approval' }), await metric('kiln_runs_waiting_for_approval', labels)];
        if (now[0] === awaiting && now[1] === waiting) return;
        if (Date.now() > deadline) throw new Error(`gauges stayed at ${now.join(', ')}, expected ${awaiting}, ${waiting}; ${fleetLog.join(' | ')}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    await t.worker.fleetGauges!.first;
    const h = await t.start(testInput({ repo, model: `scripted:${script}`, allowUnverified: true, searchAttributes: true }));
    await t.waitFor(h, (s) => s.pendingApprovals.length > 0);
    await gaugesReach(1, 1);
    // ended from outside while it waits, as when a host dies with it or someone terminates it: the
    // workflow never says it left the phase, so the counters go on saying it waits
    const countedWaiting = async () =>
      (await metric('kiln_run_phase_entered', { phase: 'awaiting_approval' })) - (await metric('kiln_run_phase_left', { phase: 'awaiting_approval' }));
    const before = await countedWaiting();
    expect(before).toBeGreaterThanOrEqual(1);
    await h.terminate('gone while waiting');
    await gaugesReach(0, 0);
    expect(await countedWaiting()).toBe(before);
    // every phase is there (0 when no run is in it), and the time of the count says it is fresh
    for (const phase of ['preparing', 'editing', 'succeeded']) expect(await metric('kiln_runs', { ...labels, phase })).toBe(0);
    expect(await metric('kiln_fleet_counted_at_seconds', labels)).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(fleetLog).toEqual([]);
  });
});
