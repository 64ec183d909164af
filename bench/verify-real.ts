/**
 * What verification costs on real libraries (examples/eval-real, fetched from their registries):
 * each task's checks on its planted-bug base, in the sandbox with a warm cache, run as before
 * (untraced, no preloads) and as the verifier runs them now (traced, with the integrity preloads),
 * plus reading the trace. A counterfactual run, when one is needed, costs one more setup and run
 * of the checks that failed on the base: the "untraced" column is its floor.
 */
import { execa } from 'execa';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { integrityEnv } from '../src/checks/integrity.js';
import { reportEnv } from '../src/checks/reports.js';
import { readTrace } from '../src/checks/trace.js';
import { makeFixtureRepo } from '../src/eval/fixture.js';
import { loadSuite } from '../src/eval/suite.js';
import { createSandbox } from '../src/sandbox/index.js';

const SUITE = fileURLToPath(new URL('../../examples/eval-real/', import.meta.url));
const TASKS = ['pytest-packaging-specifiers', 'mocha-spec-buffer-equal', 'go-test-go-cmp-approx', 'unittest-more-itertools-tail'];

export interface VerifyRealRow {
  task: string;
  command: string;
  untracedMs: number;
  tracedMs: number;
  readTraceMs: number;
  filesReached: number;
  exitCodes: Array<number | null>;
  skipped?: string;
}

export async function benchVerifyReal(o: { sandbox: 'bwrap' | 'off'; log: (s: string) => void }): Promise<VerifyRealRow[]> {
  const sandbox = await createSandbox({ mode: o.sandbox });
  const suite = await loadSuite(SUITE, TASKS);
  const rows: VerifyRealRow[] = [];
  for (const task of suite.tasks) {
    const command = task.checks[0] ?? '';
    let repo: string | undefined;
    try {
      repo = await makeFixtureRepo(task);
      const scratch = mkdtempSync(join(tmpdir(), 'kiln-bench-verify-'));
      const cache = join(scratch, 'cache');
      mkdirSync(cache, { recursive: true });
      for (const s of task.setup) {
        const r = await sandbox.run(s, { workspace: repo, timeoutMs: 20 * 60_000, network: true, cacheDir: cache });
        if (r.exitCode !== 0) throw new Error(`setup ${s} exited ${r.exitCode}`);
      }
      const env = reportEnv(join(cache, 'reports'));
      const time = async (f: () => Promise<number | null>) => {
        const t = performance.now();
        const code = await f();
        return { ms: Math.round(performance.now() - t), code };
      };
      // once to warm the toolchain's caches, then each way
      await sandbox.run(command, { workspace: repo, timeoutMs: 30 * 60_000, env, cacheDir: cache });
      const plain = await time(async () => (await sandbox.run(command, { workspace: repo!, timeoutMs: 30 * 60_000, env, cacheDir: cache })).exitCode);
      const preload = join(scratch, 'preload');
      const files = (await execa('git', ['ls-files'], { cwd: repo })).stdout.split('\n').filter(Boolean);
      const traceFile = join(scratch, 'trace.log');
      const verifierEnv = { ...env, ...(await integrityEnv(preload, preload, { dir: repo, files })) };
      const traced = await time(
        async () =>
          (await sandbox.run(command, { workspace: repo!, timeoutMs: 30 * 60_000, env: verifierEnv, cacheDir: cache, readOnlyPaths: [preload], traceFile }))
            .exitCode,
      );
      const t = performance.now();
      const trace = await readTrace(traceFile, repo);
      const readTraceMs = Math.round(performance.now() - t);
      rows.push({
        task: task.name,
        command,
        untracedMs: plain.ms,
        tracedMs: traced.ms,
        readTraceMs,
        filesReached: trace.inside.size,
        exitCodes: [plain.code, traced.code],
      });
      o.log(`  ${task.name}: untraced ${plain.ms} ms, traced ${traced.ms} ms (+${readTraceMs} ms to read ${trace.inside.size} paths)`);
      rmSync(scratch, { recursive: true, force: true });
    } catch (err) {
      rows.push({
        task: task.name,
        command,
        untracedMs: 0,
        tracedMs: 0,
        readTraceMs: 0,
        filesReached: 0,
        exitCodes: [],
        skipped: (err as Error).message.split('\n')[0],
      });
      o.log(`  ${task.name}: skipped (${(err as Error).message.split('\n')[0]})`);
    } finally {
      if (repo) rmSync(dirname(repo), { recursive: true, force: true });
    }
  }
  return rows;
}
