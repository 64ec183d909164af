/**
 * Runs per minute on a real cluster: the PostgreSQL-backed server `kiln cluster` starts, two
 * worker processes as two hosts, N concurrent runs of a scripted task (a test double for the
 * model only: worktrees, policy, sandbox and git are real). Figures, not a test.
 *
 *   node dist/bench/cluster.js [--runs 50] [--turns 6] [--server-defaults] [--shards 4] [--json]
 *
 * --server-defaults starts the server without Kiln's agent dynamic config (the baseline).
 */
import { Client, Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { outcome, startRun } from '../src/client/runs.js';
import type { RunInput, RunResult } from '../src/shared/types.js';
import { startCluster } from '../src/temporal/cluster.js';

interface Args {
  runs: number;
  turns: number;
  serverDefaults: boolean;
  shards: number;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 50, turns: 6, serverDefaults: false, shards: 4, json: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    if (k === '--json') a.json = true;
    else if (k === '--server-defaults') a.serverDefaults = true;
    else if (k === '--runs' || k === '--turns' || k === '--shards') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${k} needs a positive integer`);
      a[k.slice(2) as 'runs' | 'turns' | 'shards'] = n;
    } else throw new Error(`unknown option ${k}; options: --runs N --turns N --shards N --server-defaults --json`);
  }
  return a;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };

function repo(dir: string): string {
  const r = join(dir, 'repo');
  mkdirSync(r, { recursive: true });
  writeFileSync(join(r, 'a.txt'), 'one\n');
  // one file for each reading turn: the same read three times in a row is a stuck run
  for (let i = 0; i < READ_FILES; i++) writeFileSync(join(r, `n${i}.txt`), `note ${i}\n`);
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['add', '-A'],
    ['commit', '-q', '-m', 'base'],
  ])
    execFileSync('git', args, { cwd: r, env: GIT_ENV });
  return r;
}

const READ_FILES = 100;

/** one edit, reads of different files, finish: `turns` model turns in all */
function script(dir: string, turns: number): string {
  const steps = [
    { tool_use: [{ name: 'edit', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } }] },
    ...Array.from({ length: Math.max(0, turns - 2) }, (_, i) => ({ tool_use: [{ name: 'read_file', input: { path: `n${i % READ_FILES}.txt` } }] })),
    { tool_use: [{ name: 'finish', input: { summary: 'done' } }] },
  ];
  const f = join(dir, 'script.json');
  writeFileSync(f, JSON.stringify({ steps }));
  return f;
}

function worker(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'worker.js')], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const t = setInterval(() => {
      if (out.includes('kiln worker ready')) {
        clearInterval(t);
        resolve(child);
      } else if (child.exitCode !== null) {
        clearInterval(t);
        reject(new Error(`worker exited: ${out}`));
      }
    }, 100);
  });
}

export async function benchCluster(a: Args, print: (s: string) => void): Promise<Record<string, unknown>> {
  const scratch = mkdtempSync(join(tmpdir(), 'kiln-bench-cluster-'));
  chmodSync(scratch, 0o755);
  const cluster = await startCluster({
    dir: join(scratch, 'cluster'),
    shards: a.shards,
    dynamic: a.serverDefaults ? {} : undefined,
    log: (s) => print(`  ${s}`),
  });
  const queue = `kiln-bench-${process.pid}`;
  const hosts: ChildProcess[] = [];
  const connection = await Connection.connect({ address: cluster.address });
  try {
    for (const h of ['a', 'b']) {
      hosts.push(
        await worker({
          TEMPORAL_ADDRESS: cluster.address,
          KILN_TASK_QUEUE: queue,
          KILN_HOST: `${queue}-${h}`,
          KILN_HOME: mkdtempSync(join(scratch, `home-${h}-`)),
        }),
      );
    }
    const client = new Client({ connection, namespace: cluster.namespace });
    const s = script(scratch, a.turns);
    const inputs: RunInput[] = Array.from({ length: a.runs }, (_, i) => ({
      runId: `bench-${process.pid}-${i}`,
      repo: repo(join(scratch, `r${i}`)),
      goal: 'bench: change one to two',
      model: `scripted:${s}`,
      checks: [],
      setup: [],
      maxTokens: 4096,
      sandbox: 'bwrap',
      approvalMode: 'default',
      allowTestEdits: false,
      approvalTimeoutMs: 10 * 60_000,
      humanTimeoutMs: 10 * 60_000,
      budgets: { maxTurns: 40, maxTokens: 5_000_000, maxUsd: 100, maxWallMs: 30 * 60_000 },
      maxAttempts: 3,
      heartbeatTimeoutMs: 10_000,
      commandTimeoutMs: 60_000,
      searchAttributes: true,
      // the bench repo has no checks: without this a run waits for a person (no checks → needs_human)
      allowUnverified: true,
    }));
    print(
      `  ${a.runs} runs of ${a.turns} turns over two hosts (${a.serverDefaults ? 'server default dynamic config' : "Kiln's agent dynamic config"}, ${a.shards} shards)`,
    );
    const t0 = performance.now();
    const settled = await Promise.allSettled(
      inputs.map(async (i) => {
        const { handle } = await startRun(client, i, { taskQueue: queue });
        // a blocked run fails its workflow (KilnRunNotAchieved): outcome() reads its result either way
        const r: RunResult = await outcome(handle);
        return { r };
      }),
    );
    const wallMs = performance.now() - t0;
    const ok = settled.filter((x) => x.status === 'fulfilled' && x.value.r.state === 'succeeded').length;
    const failures = settled.length - ok;
    const reasons = settled.flatMap((x) =>
      x.status === 'rejected' ? [String(x.reason).slice(0, 200)] : x.value.r.state !== 'succeeded' ? [`${x.value.r.state}: ${x.value.r.reason ?? ''}`] : [],
    );
    const figures = {
      runs: a.runs,
      turns: a.turns,
      shards: a.shards,
      dynamicConfig: a.serverDefaults ? 'server defaults' : 'kiln agent',
      succeeded: ok,
      failures,
      wallSeconds: Math.round(wallMs / 100) / 10,
      runsPerMinute: Math.round((ok / (wallMs / 60_000)) * 10) / 10,
      reasons: [...new Set(reasons)].slice(0, 5),
    };
    print(`  ${ok}/${a.runs} succeeded, ${failures} failed, in ${figures.wallSeconds} s: ${figures.runsPerMinute} runs/minute`);
    for (const r of figures.reasons) print(`  failed: ${r}`);
    return figures;
  } finally {
    for (const h of hosts) h.kill('SIGKILL');
    await connection.close();
    await cluster.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = parseArgs(process.argv.slice(2));
  benchCluster(args, (s) => (args.json ? process.stderr.write(`${s}\n`) : console.log(s)))
    .then((f) => {
      if (args.json) console.log(JSON.stringify(f));
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error(`bench cluster: ${(err as Error).message}`);
      process.exit(1);
    });
}
