/** A real worker as a child process, so a test can kill -9 it like a crashed machine. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, testKilnHome } from './repo.js';

/**
 * The child runs the compiled worker (Node 20 cannot run .ts), so it would run stale code after a
 * source edit without a rebuild; say so instead. (In-process workers bundle from src/.)
 */
function assertBuiltFromSource(entry: string): void {
  let built: number;
  try {
    built = statSync(entry).mtimeMs;
  } catch {
    throw new Error(`${entry} does not exist: run \`npm run build\` first (npm test does)`);
  }
  const newest = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .reduce((m, f) => Math.max(m, statSync(join(ROOT, 'src', f)).mtimeMs), 0);
  if (newest > built) throw new Error(`${entry} is older than src/: run \`npm run build\` first (npm test does)`);
}

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  /** resolves when the process has exited (by itself or killed) */
  exited: Promise<number | null>;
  kill9(): Promise<void>;
}

/** the compiled worker of this checkout */
export const WORKER_ENTRY = join(ROOT, 'dist', 'src', 'worker.js');

/** `entry`: another build's worker.js (the versioning test runs two builds at once); checked only for this checkout's */
export async function spawnWorker(env: Record<string, string>, entry = WORKER_ENTRY): Promise<WorkerProcess> {
  if (entry === WORKER_ENTRY) assertBuiltFromSource(entry);
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, KILN_HOME: testKilnHome(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!out.includes('kiln worker ready')) {
    if (child.exitCode !== null) throw new Error(`worker exited early: ${out}`);
    if (Date.now() > deadline) throw new Error(`worker not ready: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output: () => out,
    exited,
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
