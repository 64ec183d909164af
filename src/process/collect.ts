import { spawnCommand } from './spawn.js';

export interface Collected {
  /** null when killed by a signal or never started */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** printed more than maxBytes: killed, and stdout/stderr hold what came before */
  overCap: boolean;
  /** the program could not be started */
  error?: string;
}

export interface CollectOptions {
  cwd: string;
  maxBytes: number;
  timeoutMs?: number;
}

/**
 * Run a read-only helper program (ripgrep) to the end with stdin closed and its output collected
 * up to a cap; the exit code, a timeout and a spawn failure are data for the caller to judge.
 */
export function collect(file: string, args: readonly string[], o: CollectOptions): Promise<Collected> {
  return new Promise((resolve) => {
    const child = spawnCommand(file, args, { cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let overCap = false;
    let timedOut = false;
    let error: string | undefined;
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGTERM');
          }, o.timeoutMs);
    const take = (into: Buffer[]) => (chunk: Buffer) => {
      if (overCap) return;
      bytes += chunk.length;
      if (bytes > o.maxBytes) {
        overCap = true;
        child.kill('SIGKILL');
      } else into.push(chunk);
    };
    child.stdout!.on('data', take(out));
    child.stderr!.on('data', take(err));
    child.on('error', (e: Error) => (error = e.message));
    child.on('close', (code: number | null) => {
      clearTimeout(timer);
      resolve({
        exitCode: code !== null && code >= 0 ? code : null,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        timedOut,
        overCap,
        ...(error !== undefined ? { error } : {}),
      });
    });
  });
}
