/**
 * Check time of a Go, a Node and a Python repo (the cheating suite's fixtures): run directly on
 * the host, in the sandbox with a cold cache (what every command got before caches: an empty
 * HOME), in the sandbox with the warm per-repo cache it gets now, and as the verifier runs it:
 * warm, traced (strace around the sandbox) with the integrity preloads, plus reading the trace.
 */
import { execa } from 'execa';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createSandbox } from '../src/sandbox/index.js';
import { integrityEnv } from '../src/checks/integrity.js';
import { readTrace } from '../src/checks/trace.js';

const FIXTURES = fileURLToPath(new URL('../../examples/eval-cheats/fixtures/', import.meta.url));
/** the verifier's own settings: go's result cache off, so each run really tests */
const ENV = { GOFLAGS: '-count=1' };

export interface CheckRow {
  repo: string;
  command: string;
  directMs: number;
  sandboxColdMs: number;
  sandboxWarmMs: number;
  /** as the verifier runs it: warm, traced, with the preloads; and the trace's reading apart */
  verifierMs: number;
  readTraceMs: number;
  exitCodes: Array<number | null>;
}

export async function benchChecks(o: { sandbox: 'bwrap' | 'off'; log: (s: string) => void }): Promise<CheckRow[]> {
  const sandbox = await createSandbox({ mode: o.sandbox });
  const rows: CheckRow[] = [];
  for (const [fixture, command] of [
    ['ring-go', 'go test ./...'],
    ['ring-js', 'npm test'],
    ['merge-py', 'python3 -m pytest -q'],
  ] as const) {
    const scratch = mkdtempSync(join(tmpdir(), 'kiln-bench-checks-'));
    try {
      const dir = join(scratch, fixture);
      cpSync(join(FIXTURES, fixture), dir, { recursive: true });
      const time = async (f: () => Promise<number | null>) => {
        const t = performance.now();
        const code = await f();
        return { ms: Math.round(performance.now() - t), code };
      };
      const direct = await time(async () => (await execa(command, { shell: true, cwd: dir, reject: false, env: ENV })).exitCode ?? null);
      const cache = join(scratch, 'cache');
      mkdirSync(cache, { recursive: true });
      const inSandbox = () => time(async () => (await sandbox.run(command, { workspace: dir, timeoutMs: 600_000, env: ENV, cacheDir: cache })).exitCode);
      const cold = await inSandbox();
      const warm = await inSandbox();
      const preload = join(scratch, 'preload');
      const traceFile = join(scratch, 'trace.log');
      const env = { ...ENV, ...(await integrityEnv(preload, preload, { dir, files: [] })) };
      const verifier = await time(
        async () => (await sandbox.run(command, { workspace: dir, timeoutMs: 600_000, env, cacheDir: cache, readOnlyPaths: [preload], traceFile })).exitCode,
      );
      const t = performance.now();
      await readTrace(traceFile, dir);
      const readTraceMs = Math.round(performance.now() - t);
      rows.push({
        repo: fixture,
        command,
        directMs: direct.ms,
        sandboxColdMs: cold.ms,
        sandboxWarmMs: warm.ms,
        verifierMs: verifier.ms,
        readTraceMs,
        exitCodes: [direct.code, cold.code, warm.code, verifier.code],
      });
      o.log(`  ${fixture}: direct ${direct.ms} ms, sandbox cold ${cold.ms} ms, warm ${warm.ms} ms, traced ${verifier.ms} ms (+${readTraceMs} ms to read)`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  return rows;
}
