/**
 * Side by side against one zero-latency mock of the Anthropic API: Kiln's real model path
 * (`kiln run` with ANTHROPIC_BASE_URL, a `kiln worker` process, a real Temporal dev server) and
 * any other harness command pointed at the same mock, trials interleaved so load drifts hit
 * every harness alike. Then 50 runs started at once on one fresh worker: throughput and the
 * worker's peak RSS.
 */
import { Client, Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startRun } from '../src/client/runs.js';
import { DEFAULT_MODEL } from '../src/model/models.js';
import type { RunInput } from '../src/shared/types.js';
import { findTemporalCli } from '../src/temporal/binary.js';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server.js';
import { measureFloors, type Floors } from './floors.js';
import { firstRequestPath, turnPaths, type FirstRequestPath, type TurnPath } from './history.js';
import { harnessTurns, MOCK_COMMAND, startMockAnthropic, type MockAnthropic } from './mock-anthropic.js';
import { round, spread, type Spread } from './stats.js';
import { makeTaskRepo } from './task.js';
import { settings } from '../src/settings.js';

/** The goals the issue set (ms, ms, s, MB). */
export const GOALS = { turnP50Ms: 15, turnP95Ms: 40, firstRequestS: 0.4, rss50MB: 300 } as const;

/** KILN_BENCH_BIN times another build (e.g. main's, for a before/after) with this bench. */
const KILN_BIN = resolve(settings().benchBin ?? fileURLToPath(new URL('../../bin/kiln.js', import.meta.url)));

export interface Harness {
  name: string;
  /** shell command run in a fresh clone of the task repo; ANTHROPIC_BASE_URL/_API_KEY are set */
  command: string;
  /** its own environment (another Kiln build's worker queue) */
  env?: NodeJS.ProcessEnv;
  /** a `kiln run`: given an --id, so its history tells where the time to the first request went */
  kiln?: boolean;
}

export interface HarnessFigures {
  name: string;
  trials: number;
  /** pooled over all trials: reply N sent → request N+1 received */
  turnMs: Spread;
  /** process spawn → the mock's first request, one sample a trial */
  firstRequestS: Spread;
  /** Kiln's: the p50 of each stretch of that time, from the run's history */
  firstRequestPath?: FirstRequestPath;
  /** p50 of each stretch of a turn that went through the server, over every trial */
  turnPath?: TurnPath;
  /** how many of the turns went through the server (the others ran on in the activity before) */
  handOffs?: { turns: number; of: number };
  failures: string[];
}

export interface SideBySideResult {
  turns: number;
  trials: number;
  /** the mock's think time before each reply, in ms (not in the per-turn figures) */
  thinkMs: number;
  harnesses: HarnessFigures[];
  /** the `kiln worker` process's peak RSS over all the trials */
  workerPeakRssMB: number;
  /** the same for the build given with --before */
  beforeWorkerPeakRssMB?: number;
  fifty?: FiftyFigures;
  /** what one turn cannot go below here, measured on the same server after the trials */
  floors?: Floors;
}

export interface FiftyFigures {
  runs: number;
  turnsEach: number;
  succeeded: number;
  wallS: number;
  runsPerMin: number;
  workerPeakRssMB: number;
}

/** VmHWM: the peak resident set the kernel saw for the process. */
function peakRssMB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

function baseEnv(mock: MockAnthropic, server: DevServer, queue: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'dummy-key-for-the-mock',
    TEMPORAL_ADDRESS: server.address,
    KILN_TASK_QUEUE: queue,
    KILN_HOST: `bench-${queue}`,
    // the CLI's own Web UI link would point at the bench's throwaway server
    KILN_UI_URL: '',
  };
}

/** The Node options a script's `#!/usr/bin/env -S node …` line gives. */
function shebangFlags(bin: string): string[] {
  const first = readFileSync(bin, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\S*env -S node((?:\s+--?[\w-]+(?:=\S+)?)*)\s*$/.exec(first);
  return m ? m[1]!.trim().split(/\s+/).filter(Boolean) : [];
}

/** `kiln worker` as users start it; resolves once it says it is ready. */
async function startWorkerProcess(env: NodeJS.ProcessEnv, bin = KILN_BIN): Promise<ChildProcess> {
  // through its shebang, with the Node flags it gives, as `kiln worker` starts for users
  const child = spawn(bin, ['worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`kiln worker not ready within 120 s: ${said.slice(-500)}`)), 120_000);
    const look = (d: Buffer) => {
      said += d.toString();
      if (said.includes('kiln worker ready')) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => fail(new Error(`kiln worker exited (${code}) before it was ready: ${said.slice(-500)}`)));
  });
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await gone;
  clearTimeout(t);
}

function runShell(
  command: string,
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; shell?: boolean },
): Promise<{ code: number | null; tail: string }> {
  return new Promise((ok) => {
    const child = spawn(command, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'], shell: o.shell ?? false });
    let tail = '';
    const keep = (d: Buffer) => (tail = (tail + d.toString()).slice(-2000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code) => ok({ code, tail }));
  });
}

function gitClone(from: string, to: string): Promise<unknown> {
  return runShell('git', ['clone', '-q', from, to], { cwd: '/', env: process.env });
}

export async function benchSideBySide(o: {
  tmp: string;
  turns: number;
  trials: number;
  harnesses: Harness[];
  fifty: number;
  sandbox: 'bwrap' | 'off';
  /** another build's bin/kiln.js, run as its own harness with its own worker: before and after */
  before?: string;
  /** the mock's think time before each reply (0: zero latency) */
  thinkMs?: number;
  log: (s: string) => void;
}): Promise<SideBySideResult> {
  const binary = findTemporalCli();
  if (!binary) throw new Error('no Temporal CLI binary found: run `npm run setup` (or set KILN_TEMPORAL_CLI)');
  const repo = makeTaskRepo(join(o.tmp, 'sbs-repo'), 3);
  const mock = await startMockAnthropic({ turns: o.turns, thinkMs: o.thinkMs ?? 0 });
  const server = await startDevServer({ binary, dbFile: join(o.tmp, 'sbs-temporal.db'), port: await freePort(), uiPort: await freePort() });
  try {
    const queue = `kiln-sbs-${randomBytes(4).toString('hex')}`;
    const env = baseEnv(mock, server, queue);
    const worker = await startWorkerProcess(env);
    o.log(`  dev server at ${server.address}, kiln worker ready (pid ${worker.pid}), mock at ${mock.url}`);
    const beforeEnv = o.before ? baseEnv(mock, server, `${queue}-before`) : undefined;
    const beforeWorker = o.before ? await startWorkerProcess(beforeEnv!, o.before) : undefined;
    if (beforeWorker) o.log(`  before: ${o.before}, its worker ready (pid ${beforeWorker.pid})`);
    const pooled = new Map<
      string,
      { gaps: number[]; first: number[]; paths: FirstRequestPath[]; turnPaths: TurnPath[]; failures: string[]; trials: number; kiln?: boolean }
    >();
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection, namespace: 'default' });
    // with the Node flags of its shebang, as `kiln run` starts for users (the bench's own Node, so both builds run on one)
    const kilnRun = (bin: string) =>
      `${[process.execPath, ...shebangFlags(bin), bin].map((a) => JSON.stringify(a)).join(' ')} run --repo . --goal 'side-by-side benchmark' --check ${JSON.stringify(MOCK_COMMAND)} --sandbox ${o.sandbox} --approval-mode auto --max-turns ${o.turns + 5}`;
    const all: Harness[] = [
      { name: 'kiln (Temporal)', command: kilnRun(KILN_BIN), kiln: true },
      ...(o.before ? [{ name: 'kiln before', command: kilnRun(o.before), env: beforeEnv, kiln: true }] : []),
      ...o.harnesses,
    ];
    let workerPeak = NaN;
    let beforePeak: number | undefined;
    try {
      for (let trial = 1; trial <= o.trials; trial++) {
        for (const h of all) {
          const cwd = join(o.tmp, `sbs-${trial}-${h.name.replace(/\W+/g, '_')}`);
          await gitClone(repo, cwd);
          mock.reset();
          o.log(`  trial ${trial} ${h.name}: starting in ${cwd}`);
          const id = `sbs-${trial}-${randomBytes(3).toString('hex')}`;
          const t0 = performance.now();
          const res = await runShell(h.kiln ? `${h.command} --id ${id}` : h.command, [], { cwd, env: h.env ?? env, shell: true });
          const p = pooled.get(h.name) ?? { gaps: [], first: [], paths: [], turnPaths: [], failures: [], trials: 0, kiln: h.kiln };
          pooled.set(h.name, p);
          p.trials++;
          const turns = harnessTurns(mock.requests);
          if (res.code !== 0 || turns.turns < o.turns)
            p.failures.push(`trial ${trial}: exit ${res.code}, ${turns.turns}/${o.turns} turns: ${res.tail.trim().split('\n').slice(-2).join(' | ')}`);
          if (turns.first) p.first.push((turns.first.at - t0) / 1000);
          if (h.kiln && turns.first) {
            // the history's times are the wall clock's; the bench's and the mock's are performance.now()
            const wall = (x: number) => performance.timeOrigin + x;
            const history = await client.workflow.getHandle(id).fetchHistory();
            const path = firstRequestPath(history, wall(t0), wall(turns.first.at));
            if (path) p.paths.push(path);
            p.turnPaths.push(
              ...turnPaths(
                history,
                mock.requests.map((r) => ({ at: wall(r.at), doneAt: wall(r.doneAt) })),
              ),
            );
          }
          // pooled raw gaps, so the percentiles are over every turn of every trial
          const reqs = [...mock.requests];
          for (let i = 1; i < reqs.length; i++) if (reqs[i]!.turn === reqs[i - 1]!.turn + 1) p.gaps.push(reqs[i]!.at - reqs[i - 1]!.doneAt);
          o.log(
            `  trial ${trial} ${h.name}: p50 ${turns.turnMs.p50} ms/turn, first request ${turns.first ? ((turns.first.at - t0) / 1000).toFixed(2) : '–'} s${res.code === 0 ? '' : ` (exit ${res.code})`}`,
          );
        }
      }
      workerPeak = peakRssMB(worker.pid!);
      if (beforeWorker) beforePeak = peakRssMB(beforeWorker.pid!);
    } finally {
      await stopProcess(worker);
      if (beforeWorker) await stopProcess(beforeWorker);
      await connection.close();
    }
    const harnesses = [...pooled.entries()].map(([name, p]) => ({
      name,
      trials: p.trials,
      turnMs: spread(p.gaps),
      firstRequestS: spread(p.first, 3),
      ...(p.paths.length ? { firstRequestPath: medians(p.paths) } : {}),
      ...(p.turnPaths.length ? { turnPath: medians(p.turnPaths) } : {}),
      ...(p.kiln ? { handOffs: { turns: p.turnPaths.length, of: p.gaps.length } } : {}),
      failures: p.failures,
    }));

    o.log('  floors: a no-op hand-off through the same server, and a sandboxed echo');
    const floors = await measureFloors({ server, rounds: o.turns, sandbox: o.sandbox });
    let fifty: FiftyFigures | undefined;
    if (o.fifty > 0) fifty = await benchConcurrent({ ...o, repo, server, n: o.fifty });
    return {
      turns: o.turns,
      trials: o.trials,
      thinkMs: o.thinkMs ?? 0,
      harnesses,
      workerPeakRssMB: workerPeak,
      ...(beforePeak !== undefined ? { beforeWorkerPeakRssMB: beforePeak } : {}),
      ...(fifty ? { fifty } : {}),
      floors,
    };
  } finally {
    await server.stop();
    await mock.close();
  }
}

/** N runs started at once on one fresh `kiln worker`: all must succeed. */
async function benchConcurrent(o: {
  tmp: string;
  repo: string;
  server: DevServer;
  n: number;
  sandbox: 'bwrap' | 'off';
  log: (s: string) => void;
}): Promise<FiftyFigures> {
  const turnsEach = 5;
  const mock = await startMockAnthropic({ turns: turnsEach });
  const queue = `kiln-fifty-${randomBytes(4).toString('hex')}`;
  const worker = await startWorkerProcess(baseEnv(mock, o.server, queue));
  const connection = await Connection.connect({ address: o.server.address });
  try {
    const client = new Client({ connection, namespace: 'default' });
    o.log(`  ${o.n} runs of ${turnsEach} turns at once on one worker…`);
    const t0 = performance.now();
    const handles = await Promise.all(
      Array.from(
        { length: o.n },
        async (_, i) => (await startRun(client, benchRunInput(o.repo, `fifty-${i}`, turnsEach, o.sandbox), { taskQueue: queue })).handle,
      ),
    );
    // a blocked run fails its workflow: the reason is in the cause, "Workflow execution failed" says nothing
    const results = await Promise.all(
      handles.map((h) => h.result().catch((e: Error) => ({ state: 'failed', reason: (e.cause as Error | undefined)?.message ?? e.message }) as const)),
    );
    const wallS = (performance.now() - t0) / 1000;
    const ok = results.filter((r) => r.state === 'succeeded').length;
    const bad = results.find((r) => r.state !== 'succeeded');
    if (bad) o.log(`  not every run succeeded (${ok}/${o.n}); one ended ${bad.state}: ${bad.reason ?? ''}`);
    return { runs: o.n, turnsEach, succeeded: ok, wallS: round(wallS, 1), runsPerMin: round((o.n / wallS) * 60, 1), workerPeakRssMB: peakRssMB(worker.pid!) };
  } finally {
    await stopProcess(worker);
    await connection.close();
    await mock.close();
  }
}

/** A run of the real model path (the mock answers whatever model id is sent). */
export function benchRunInput(repo: string, tag: string, turns: number, sandbox: 'bwrap' | 'off'): RunInput {
  return {
    runId: `bench-${tag}-${randomBytes(3).toString('hex')}`,
    repo,
    goal: `benchmark run ${tag}`,
    checks: [MOCK_COMMAND],
    setup: [],
    model: DEFAULT_MODEL,
    maxTokens: 4096,
    sandbox,
    approvalMode: 'auto',
    allowTestEdits: false,
    approvalTimeoutMs: 60_000,
    humanTimeoutMs: 1000,
    budgets: { maxTurns: turns + 5, maxTokens: 1e8, maxUsd: 500, maxWallMs: 30 * 60_000 },
    maxAttempts: 1,
    heartbeatTimeoutMs: 30_000,
    commandTimeoutMs: 60_000,
  };
}

/** Each stretch's own median over the trials (so they need not add up to the whole's). */
function medians<T extends object>(paths: readonly T[]): T {
  const keys = Object.keys(paths[0]!) as Array<keyof T>;
  return Object.fromEntries(keys.map((k) => [k, spread(paths.map((x) => x[k] as number)).p50])) as T;
}

const vs = (x: number, goal: number, unit: string) => `${x}${unit} (goal ≤ ${goal}${unit}: ×${round(x / goal, 2)})`;

export function sideBySideSection(r: SideBySideResult, heading: (t: string) => string): string[] {
  const lines = [
    heading(
      `Side by side: ${r.turns} turns against ${r.thinkMs ? `an Anthropic mock that thinks ${r.thinkMs} ms a turn` : 'a zero-latency Anthropic mock'}, ${r.trials} interleaved trials`,
    ),
    'per turn = mock reply N sent → request N+1 received (harness time only); first request = process spawn → first request',
  ];
  for (const h of r.harnesses) {
    lines.push(
      `${h.name.padEnd(18)} p50 ${vs(h.turnMs.p50, GOALS.turnP50Ms, ' ms')}   p95 ${vs(h.turnMs.p95, GOALS.turnP95Ms, ' ms')}   first request p50 ${vs(h.firstRequestS.p50, GOALS.firstRequestS, ' s')}   (n=${h.turnMs.n})`,
    );
    const path = h.firstRequestPath;
    if (path)
      lines.push(
        `  first request, p50 of each stretch: CLI start-up and start ${path.cliMs} ms → prepare starts +${path.toPrepareMs} → prepare ${path.prepareMs} → first turn starts +${path.toTurnMs} → its request +${path.turnToRequestMs} ms`,
      );
    const turn = h.turnPath;
    if (turn)
      lines.push(
        `  a turn through the server (${h.handOffs && h.handOffs.turns < h.handOffs.of ? `${h.handOffs.turns} of ${h.handOffs.of} turns; the others went on in the activity` : 'every turn'}), p50 of each stretch: reply → its activity done ${turn.replyToDoneMs} ms → workflow task starts +${turn.toWorkflowMs} → task ${turn.workflowTaskMs} → next turn starts +${turn.toTurnMs} → its request +${turn.turnToRequestMs} ms`,
      );
    else if (h.handOffs)
      lines.push(`  no turn went through the server: each run's ${h.handOffs.of / h.trials} turns went on in the activity that asked for the first`);
    for (const f of h.failures) lines.push(`  FAILED ${f}`);
  }
  lines.push(
    `kiln worker peak RSS over the trials: ${r.workerPeakRssMB} MB${r.beforeWorkerPeakRssMB !== undefined ? ` (before: ${r.beforeWorkerPeakRssMB} MB)` : ''}`,
  );
  if (r.floors) {
    const f = r.floors;
    const echo = f.sandboxedEchoMs;
    lines.push(
      `floors here, same server: a durable hand-off (no-op activity on another queue → workflow → the next) p50 ${f.handoffMs.p50} ms (p95 ${f.handoffMs.p95}); ` +
        (echo
          ? `one sandboxed echo p50 ${echo.p50} ms (p95 ${echo.p95}); together ${round(f.handoffMs.p50 + echo.p50, 1)} ms a turn before any harness work (goal ≤ ${GOALS.turnP50Ms} ms)`
          : `sandboxed echo ${f.sandboxNote}`),
    );
  }
  if (r.fifty) {
    const f = r.fifty;
    lines.push(
      `${f.runs} runs at once (${f.turnsEach} turns each), one worker: ${f.succeeded}/${f.runs} succeeded in ${f.wallS} s = ${f.runsPerMin} runs/min; worker peak RSS ${vs(f.workerPeakRssMB, GOALS.rss50MB, ' MB')}`,
    );
  }
  return lines;
}
