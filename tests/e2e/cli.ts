/**
 * The `kiln` CLI as a user runs it: `node bin/kiln.js ...` (the built dist/; `npx tsc` first),
 * one-shot or long-lived (a followed run, `kiln dev`, `kiln worker`), with its own KILN_HOME.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/repo.js';

export const KILN = join(ROOT, 'bin', 'kiln.js');
export const SCRIPT = 'scripted:examples/scripts/revoked-session.json';
export const GOAL = 'getSession returns revoked sessions: it must ignore revoked ones and return the newest active one';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a user with their own KILN_HOME; nothing from the calling shell that
 * changes what Kiln does (a real API key would turn the scripted demo into a real one).
 */
export function userEnv(over: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  // a home of its own only when the test did not bring one (an unused temp dir is a leak)
  const env: NodeJS.ProcessEnv = { ...process.env, KILN_HOME: over.KILN_HOME ?? mkdtempSync(join(tmpdir(), 'kiln-home-')) };
  for (const k of [
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_BASE_URL',
    'KILN_MODEL',
    'KILN_UI_URL',
    'KILN_LOG_LEVEL',
    'KILN_TASK_QUEUE',
    'KILN_DEBUG',
    'TEMPORAL_ADDRESS',
    'TEMPORAL_NAMESPACE',
    // a developer's own codec keys or metrics address would change what every test run does
    'KILN_CODEC_KEYS_FILE',
    'KILN_CODEC_KEY',
    'KILN_CODEC_KEY_ID',
    'KILN_CODEC_SERVER_TOKEN',
    'KILN_METRICS_ADDR',
  ])
    delete env[k];
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export function kiln(args: string[], o: { env: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number }): Promise<CliResult> {
  return command(process.execPath, [KILN, ...args], o);
}

export function command(file: string, args: string[], o: { env: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number }): Promise<CliResult> {
  const live = spawnLive(file, args, o);
  if (o.input !== undefined) live.child.stdin!.end(o.input);
  else live.child.stdin!.end();
  const timer = setTimeout(() => live.child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
  return live.exited.then(({ code }) => {
    clearTimeout(timer);
    return { code, stdout: live.stdout(), stderr: live.stderr() };
  });
}

export interface Live {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** resolves once stdout contains the text; fails early if the process exits first */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** SIGKILL if still running (test cleanup) */
  kill(): Promise<void>;
}

/** `bin`: another build's bin/kiln.js (default: this checkout's) */
export function spawnKiln(args: string[], o: { env: NodeJS.ProcessEnv; cwd?: string; bin?: string }): Live {
  const live = spawnLive(process.execPath, [o.bin ?? KILN, ...args], o);
  live.child.stdin!.end();
  return live;
}

function spawnLive(file: string, args: string[], o: { env: NodeJS.ProcessEnv; cwd?: string }): Live {
  const child = spawn(file, args, { env: o.env, cwd: o.cwd ?? ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(text, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      const seen = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      while (!seen()) {
        if (done) throw new Error(`${args.slice(1).join(' ')} exited before printing ${String(text)}\nstdout:\n${out}\nstderr:\n${err}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(text)}\nstdout:\n${out}\nstderr:\n${err}`);
        await sleep(100);
      }
    },
    async kill() {
      if (!done) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The exit of a long-lived process, or a failure that shows what it printed. */
export async function exitOf(l: Live, timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms\nstdout:\n${l.stdout()}\nstderr:\n${l.stderr()}`)), timeoutMs);
  });
  try {
    return await Promise.race([l.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Whether anything accepts TCP connections on the port. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1) ?? '';
}

/** Temporal SDK and Core chatter that must never reach a user's terminal. */
export const WORKER_NOISE = /Worker state changed|\[INFO\]|\[WARN\]|temporalio_client::retry|No Nexus services/;

/** Polls until `pred` holds (a run reached a phase, a file appeared). */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(250);
  }
}
