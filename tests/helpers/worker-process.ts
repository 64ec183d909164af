/** A real worker as a child process, so a test can kill -9 it like a crashed machine. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, testKilnHome } from './repo.js';

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  /** resolves when the process has exited (by itself or killed) */
  exited: Promise<number | null>;
  kill9(): Promise<void>;
}

export async function spawnWorker(env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'worker.js')], {
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
