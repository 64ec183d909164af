/**
 * Smoke test of `npm run bench` at tiny sizes: the Temporal and in-process runs of a 5-turn
 * scripted task really complete, and every figure the report prints is there and positive.
 * Values are not asserted: they are measurements, not requirements.
 */
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { benchRedaction } from '../../../bench/redaction.js';
import { activityHops, firstRequestPath, turnPaths } from '../../../bench/history.js';
import { historySection, turnsSection } from '../../../bench/report.js';
import { parseArgs } from '../../../bench/run.js';
import { piHarness } from '../../../bench/pi-anchor.js';
import { taskScript } from '../../../bench/task.js';
import { benchTurns } from '../../../bench/turns.js';
import { measureFloors } from '../../../bench/floors.js';
import { freePort, startDevServer } from '../../../src/temporal/dev-server.js';
import { findTemporalCli } from '../../../src/temporal/binary.js';
import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const positive = (x: number) => expect(Number.isFinite(x) && x > 0, String(x)).toBe(true);

describe('the bench', () => {
  it('scripts exactly the asked number of turns, with edits, commands and a final check + finish', () => {
    const s = taskScript(100);
    const turns = s.steps.reduce((n, st) => n + (st.repeat ?? 1), 0);
    expect(turns).toBe(100);
    const names = s.steps.flatMap((st) => Array<string[]>(st.repeat ?? 1).fill(st.tool_use.map((t) => t.name))).flat();
    expect(names.filter((n) => n === 'edit')).toHaveLength(10); // turns 10…90 and 99
    expect(s.steps.some((st) => (st.repeat ?? 1) > 1)).toBe(true);
    expect(s.steps.at(-1)!.tool_use.map((t) => t.name)).toEqual(['run_command', 'finish']);
  });

  it("splits the first request's time at the run's own events: start, prepare, the first turn", () => {
    const T = proto.temporal.api.enums.v1.EventType;
    const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
    const history = {
      events: [
        { eventId: 1, eventType: T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, eventTime: at(10_400) },
        {
          eventId: 5,
          eventType: T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
          eventTime: at(10_440),
          activityTaskScheduledEventAttributes: { activityType: { name: 'prepareWorkspace' } },
        },
        { eventId: 6, eventType: T.EVENT_TYPE_ACTIVITY_TASK_STARTED, eventTime: at(10_450), activityTaskStartedEventAttributes: { scheduledEventId: 5 } },
        {
          eventId: 7,
          eventType: T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
          eventTime: at(10_530),
          activityTaskCompletedEventAttributes: { scheduledEventId: 5, startedEventId: 6 },
        },
        {
          eventId: 11,
          eventType: T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
          eventTime: at(10_550),
          activityTaskScheduledEventAttributes: { activityType: { name: 'agentTurn' } },
        },
        { eventId: 12, eventType: T.EVENT_TYPE_ACTIVITY_TASK_STARTED, eventTime: at(10_560), activityTaskStartedEventAttributes: { scheduledEventId: 11 } },
      ],
    };
    expect(firstRequestPath(history, 10_000, 10_660)).toEqual({ cliMs: 400, toPrepareMs: 50, prepareMs: 80, toTurnMs: 30, turnToRequestMs: 100 });
    // a run that never reached its first turn has no such split
    expect(firstRequestPath({ events: history.events.slice(0, 4) }, 10_000, 10_660)).toBeUndefined();
  });

  it("splits each turn at the run's own events: the reply's handling, the workflow task, the next turn's start", () => {
    const T = proto.temporal.api.enums.v1.EventType;
    const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
    let id = 0;
    const ev = (type: number, ms: number, attrs: Record<string, unknown> = {}) => ({ eventId: ++id, eventType: type, eventTime: at(ms), ...attrs });
    const activity = (name: string, scheduled: number, started: number, done: number) => {
      const s = ev(T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, scheduled, { activityTaskScheduledEventAttributes: { activityType: { name } } });
      const st = ev(T.EVENT_TYPE_ACTIVITY_TASK_STARTED, started, { activityTaskStartedEventAttributes: { scheduledEventId: s.eventId } });
      const c = ev(T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, done, {
        activityTaskCompletedEventAttributes: { scheduledEventId: s.eventId, startedEventId: st.eventId },
      });
      return [s, st, c];
    };
    const task = (started: number, done: number) => {
      const st = ev(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, started);
      return [st, ev(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, done, { workflowTaskCompletedEventAttributes: { startedEventId: st.eventId } })];
    };
    const history = {
      events: [
        ...activity('prepareWorkspace', 1_000, 1_005, 1_050),
        ...task(1_060, 1_070),
        ...activity('agentTurn', 1_070, 1_080, 1_300), // request 1 at 1_100, its reply sent at 1_200
        ...task(1_305, 1_320),
        ...activity('takeBaseline', 1_320, 1_322, 1_330), // not a turn: not in the split
        ...activity('agentTurn', 1_320, 1_330, 1_500), // request 2 at 1_350
      ],
    };
    const replies = [
      { at: 1_100, doneAt: 1_200 },
      { at: 1_350, doneAt: 1_450 },
    ];
    expect(turnPaths(history, replies)).toEqual([{ replyToDoneMs: 100, toWorkflowMs: 5, workflowTaskMs: 15, toTurnMs: 10, turnToRequestMs: 20 }]);
    // an activity that took two turns: its hand-off starts from the reply to its last request
    const twoInOne = [
      { at: 1_100, doneAt: 1_150 },
      { at: 1_180, doneAt: 1_250 },
      { at: 1_350, doneAt: 1_450 },
    ];
    expect(turnPaths(history, twoInOne)).toEqual([{ replyToDoneMs: 50, toWorkflowMs: 5, workflowTaskMs: 15, toTurnMs: 10, turnToRequestMs: 20 }]);
    // the hops between activities, whichever they are: the floor's ping-pong has nothing else
    expect(activityHops(history)).toEqual([30, 22, 0]);
  });

  it('rejects bad options with a message', () => {
    expect(parseArgs(['--turns', '5', '--search-files', '100', '--json'])).toMatchObject({ turns: 5, searchFiles: 100, json: true });
    expect(() => parseArgs(['--turns', 'many'])).toThrow(/--turns needs an integer/);
    expect(() => parseArgs(['--sandbox', 'docker'])).toThrow(/bwrap or off/);
    // --before: another build to time beside this one, which must be there
    expect(parseArgs(['--before', 'bin/kiln.js']).before).toMatch(/\/bin\/kiln\.js$/);
    expect(() => parseArgs(['--before', '/nowhere/bin/kiln.js'])).toThrow(/--before takes another Kiln build.*no such file/);
    expect(parseArgs([]).pi).toBe(true);
    expect(parseArgs(['--no-pi']).pi).toBe(false);
  });

  it("pi's command points pi at the bench's mock through a models.json of the trial's own", () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-pi-anchor-'));
    try {
      // a stand-in for pi that shows what it was given: the real one is installed from npm by the bench
      const fake = join(dir, 'pi');
      writeFileSync(fake, '#!/bin/sh\ncat "$PI_CODING_AGENT_DIR/models.json"; echo; echo "$@"\n', { mode: 0o755 });
      const out = execSync(piHarness(fake).command, { cwd: dir, env: { ...process.env, ANTHROPIC_BASE_URL: 'http://127.0.0.1:8787' }, encoding: 'utf8' });
      const [models, argv] = out.split('\n');
      expect(JSON.parse(models!)).toEqual({ providers: { anthropic: { baseUrl: 'http://127.0.0.1:8787' } } });
      expect(argv).toMatch(/^-p --no-session --provider anthropic --model \S+ Run the shell commands/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('redaction finds every planted secret and reports a throughput', () => {
    const [row] = benchRedaction([0.25], 1);
    expect(row!.redactions).toBeGreaterThanOrEqual(row!.planted);
    expect(row!.planted).toBeGreaterThan(0);
    positive(row!.mbPerSec);
  });

  it('runs 5 turns through Temporal and in process, and reports every figure', async () => {
    const r = await benchTurns({ turns: 5 });
    expect(r.turns).toBe(5);
    for (const loop of [r.temporal, r.inProcess]) {
      expect(loop.turnMs.n).toBe(4);
      positive(loop.turnMs.p50);
      positive(loop.turnMs.p95);
      positive(loop.firstRequestMs);
      positive(loop.wallMs);
    }
    positive(r.temporal.serverStartMs);
    positive(r.overhead.p50Ratio);
    positive(r.overhead.wallRatio);
    // 5 turns in at least one activity that asks the model and runs its calls (one may take several
    // turns, activities/run-ahead.ts), and prepare and verify around them
    expect(r.history.byType.ACTIVITY_TASK_COMPLETED).toBeGreaterThanOrEqual(1 + 2);
    expect(r.history.time.activityRunMs.agentTurn).toBeGreaterThan(0);
    expect(r.history.time.workflowTasks).toBeGreaterThanOrEqual(2);
    positive(r.history.bytesPerTurn);
    positive(r.history.turnsToEventLimit);
    positive(r.history.turnsToByteLimit);
    // every model call of the Temporal run reserved and settled in the budget ledger
    expect(r.ledger.reserveMs.n).toBe(5);
    expect(r.ledger.settleMs.n).toBe(5);
    positive(r.ledger.perTurnP50Ms);

    const text = [...turnsSection(r), ...historySection(r)].join('\n');
    expect(text).toMatch(/ledger\s+reserve \(on the turn's path\) p50 \d+\.?\d* ms/);
    expect(text).toContain(`p50 ×${r.overhead.p50Ratio}`);
    expect(text).toMatch(/Temporal \+ worker\s+\d+\.\d ms\s+\d+\.\d ms/);
    expect(text).toMatch(/in-process loop\s+\d+\.\d ms\s+\d+\.\d ms/);
    expect(text).toContain(`${r.history.eventsPerTurn} per turn`);
    expect(text).toMatch(/51200 events → ~\d+ turns;\s+50 MB → ~\d+ turns/);
    // where a turn's time went: waiting in Temporal, and what ran
    expect(text).toMatch(/waiting\s+activity dispatch \d+\.\d ms, workflow task dispatch \d+\.\d ms/);
    expect(text).toMatch(/running\s+workflow code \d+\.\d ms; .*agentTurn \d+\.\d ms/);
  }, 120_000);

  it('measures the floors a turn cannot go below: a no-op hand-off through the server, one sandboxed echo', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-floors-test-'));
    const server = await startDevServer({ binary: findTemporalCli()!, dbFile: join(dir, 'db'), port: await freePort(), uiPort: await freePort() });
    try {
      const f = await measureFloors({ server, rounds: 4, sandbox: 'bwrap' });
      // four no-op activities: three hand-offs between them, each back through the workflow
      expect(f.handoffMs.n).toBe(3);
      positive(f.handoffMs.p50);
      // the sandbox is real here (the tests need bwrap): the echo ran in it, or the bench says why not
      expect(f.sandboxNote).toBeUndefined();
      expect(f.sandboxedEchoMs!.n).toBe(4);
      positive(f.sandboxedEchoMs!.p50);
      expect(await measureFloors({ server, rounds: 2, sandbox: 'off' })).toMatchObject({ sandboxNote: 'not measured: --sandbox off' });
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
