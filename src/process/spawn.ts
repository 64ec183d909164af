/**
 * How Kiln starts commands (git, ripgrep, the sandbox launcher). In the worker they are started by
 * a small helper process (spawner-main.ts): Node's spawn forks the calling process, copying the
 * page tables of a ~300 MB worker and blocking its event loop ~25 ms per command (measured: 5.2 s
 * of a 40-turn run), while the spawner's fork costs 3–5 ms and blocks nothing the worker needs.
 * Elsewhere (the CLI, unit tests) commands are spawned directly.
 *
 * The object returned behaves like a ChildProcess for what callers use: pid, stdio streams,
 * kill(), 'exit', 'close' and 'error'.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import type { Socket } from 'node:net';
import { Duplex, Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { dieWithParent } from './system-paths.js';
import { HandedPipe } from './handed-pipe.js';
import type { FromSpawner, StdioSpec, ToSpawner } from './protocol.js';

export type { StdioSpec } from './protocol.js';

export interface CommandOptions {
  cwd?: string;
  /** the command's whole environment; default: this process's */
  env?: NodeJS.ProcessEnv;
  /** its own process group, so signalGroup reaches everything it starts */
  detached?: boolean;
  /** killSignal (default SIGTERM) after this many ms, as Node's spawn does */
  timeout?: number;
  killSignal?: NodeJS.Signals;
  /** per fd; a missing fd is not opened */
  stdio: StdioSpec[];
  /** pipes the worker reads and writes itself when the command goes through the spawner (see HandedPipe) */
  handOver?: number[];
}

type Stream = Readable | Writable | Duplex | null | undefined;

/** The part of ChildProcess Kiln's callers use. */
export interface CommandProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: readonly Stream[];
  kill(signal?: NodeJS.Signals): boolean;
}

/** Signal the command's process group (it was started detached), or nothing if it is gone. */
export function signalGroup(child: CommandProcess, sig: NodeJS.Signals): void {
  if (child instanceof RemoteProcess) return child.signalGroup(sig);
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    /* the group is gone */
  }
}

/** Start a command: through the spawner when one is enabled, directly otherwise. */
export function spawnCommand(file: string, args: readonly string[], o: CommandOptions): CommandProcess {
  if (users > 0) return spawner().start(file, args, o);
  return spawnDirect(file, args, o);
}

function spawnDirect(file: string, args: readonly string[], o: CommandOptions): ChildProcess {
  const opened: number[] = [];
  try {
    const stdio = o.stdio.map((s) => {
      if (typeof s === 'string') return s;
      const fd = openSync(s.file, 'r');
      opened.push(fd);
      return fd;
    });
    return spawn(file, args, {
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      env: o.env ?? process.env,
      detached: o.detached ?? false,
      stdio: stdio as StdioOptions,
      ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
      ...(o.killSignal !== undefined ? { killSignal: o.killSignal } : {}),
    });
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

let users = 0;
let current: Spawner | undefined;

/**
 * Commands of this process go through a spawner from now on, until the returned function is
 * called (the worker calls it at shutdown); several workers in one process share one spawner.
 */
export function useSpawner(): () => void {
  users++;
  spawner();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--users === 0 && current) {
      current.stop();
      current = undefined;
    }
  };
}

function spawner(): Spawner {
  if (!current || current.dead) current = new Spawner();
  return current;
}

/** Kill the spawner (tests: what happens to commands in flight when it dies). */
export function spawnerPid(): number | undefined {
  return current && !current.dead ? current.pid : undefined;
}

let compiledMain: string | undefined;

/**
 * spawner-main beside this module: compiled in dist/, and from src/ (tests run TypeScript
 * through vitest, which a plain Node child cannot) transpiled once per process with the
 * TypeScript compiler; it imports only Node built-ins, so that one file is the whole program.
 */
function spawnerMainPath(): string {
  const own = fileURLToPath(import.meta.url);
  const ext = extname(own);
  const beside = join(dirname(own), `spawner-main${ext}`);
  if (ext !== '.ts') return beside;
  if (compiledMain) return compiledMain;
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  const out = ts.transpileModule(readFileSync(beside, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  compiledMain = join(mkdtempSync(join(tmpdir(), 'kiln-spawner-')), 'spawner-main.mjs');
  writeFileSync(compiledMain, out.outputText);
  return compiledMain;
}

class Spawner {
  readonly pid?: number | undefined;
  dead = false;
  private readonly child: ChildProcess;
  private readonly running = new Map<number, RemoteProcess>();
  private nextId = 1;

  constructor() {
    const main = spawnerMainPath();
    // The kernel kills it when the worker dies, however the worker dies; commands started with
    // PDEATHSIG (the sandbox launcher) then die with it. Without setpriv, the closed channel does.
    const [file = process.execPath, ...args] = [...dieWithParent('SIGKILL'), process.execPath, main];
    // every request carries its command's whole environment; the worker's secrets stay out of this one
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}) };
    this.child = spawn(file, args, { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    this.pid = this.child.pid;
    this.child.on('message', (m: FromSpawner, handle?: Socket) => this.running.get(m.id)?.receive(m, handle));
    this.child.on('error', (err) => this.died(`could not be started: ${err.message}`));
    this.child.on('exit', (code, signal) => this.died(signal ? `was killed by ${signal}` : `exited with code ${code}`));
    this.idle();
  }

  start(file: string, args: readonly string[], o: CommandOptions): RemoteProcess {
    const id = this.nextId++;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.env ?? process.env)) if (v !== undefined) env[k] = v;
    const p = new RemoteProcess(id, file, o.stdio, (m) => this.send(m), new Set(o.handOver));
    this.running.set(id, p);
    p.once('close', () => {
      this.running.delete(id);
      if (this.running.size === 0) this.idle();
    });
    this.busy();
    this.send({
      t: 'spawn',
      id,
      file,
      args: [...args],
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      env,
      detached: o.detached ?? false,
      ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
      ...(o.killSignal !== undefined ? { killSignal: o.killSignal } : {}),
      stdio: o.stdio,
      ...(o.handOver?.length ? { handOver: o.handOver } : {}),
    });
    return p;
  }

  stop(): void {
    this.dead = true;
    if (this.child.connected) this.child.disconnect();
  }

  private send(m: ToSpawner): void {
    if (this.dead || !this.child.connected) return;
    this.child.send(m, (err) => {
      if (err) this.died(`stopped taking requests: ${err.message}`);
    });
  }

  /** Every command in flight fails with the reason; the next spawn starts a new spawner. */
  private died(why: string): void {
    this.dead = true;
    const inFlight = [...this.running.values()];
    this.running.clear();
    for (const p of inFlight) p.lost(`the command spawner (pid ${this.pid ?? '?'}) ${why}`);
  }

  // a worker waiting on nothing may exit; one waiting on a command may not, as with a direct child
  private idle(): void {
    this.child.unref();
    this.child.channel?.unref();
  }

  private busy(): void {
    this.child.ref();
    this.child.channel?.ref();
  }
}

/** A command the spawner runs, seen from the worker. */
class RemoteProcess extends EventEmitter implements CommandProcess {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly stdio: Stream[];
  private exited = false;
  private closed = false;
  /** fds whose output has ended: destroying them afterwards needs no word to the spawner */
  private readonly ended = new Set<number>();

  constructor(
    private readonly id: number,
    private readonly file: string,
    spec: readonly StdioSpec[],
    private readonly send: (m: ToSpawner) => void,
    handOver: ReadonlySet<number>,
  ) {
    super();
    this.stdio = spec.map((s, fd) => (s === 'pipe' ? (handOver.has(fd) ? new HandedPipe() : this.stream(fd)) : null));
  }

  get stdin(): Writable | null {
    return (this.stdio[0] as Writable | undefined) ?? null;
  }
  get stdout(): Readable | null {
    return (this.stdio[1] as Readable | undefined) ?? null;
  }
  get stderr(): Readable | null {
    return (this.stdio[2] as Readable | undefined) ?? null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.exited || this.closed) return false;
    this.send({ t: 'kill', id: this.id, signal });
    return true;
  }

  signalGroup(sig: NodeJS.Signals): void {
    // Straight from here (same uid): also after 'close', for what the command left running.
    if (this.pid !== undefined) {
      try {
        process.kill(-this.pid, sig);
      } catch {
        /* the group is gone */
      }
    } else if (!this.closed) this.send({ t: 'kill', id: this.id, signal: sig });
  }

  receive(m: FromSpawner, handle?: Socket): void {
    switch (m.t) {
      case 'handle': {
        const pipe = this.stdio[m.fd];
        if (pipe instanceof HandedPipe && handle) pipe.attach(handle);
        else handle?.destroy();
        return;
      }
      case 'spawned':
        this.pid = m.pid;
        this.emit('spawn');
        return;
      case 'data':
        (this.stdio[m.fd] as Readable | null)?.push(m.data);
        return;
      case 'eof':
        this.ended.add(m.fd);
        (this.stdio[m.fd] as Readable | null)?.push(null);
        return;
      case 'exit':
        this.exited = true;
        this.exitCode = m.code;
        this.signalCode = m.signal as NodeJS.Signals | null;
        this.emit('exit', m.code, m.signal);
        return;
      case 'error': {
        const err = Object.assign(new Error(m.message), m.code ? { code: m.code } : {});
        this.emit('error', err);
        return;
      }
      case 'close':
        this.finish(m.code, m.signal);
        return;
    }
  }

  /** The spawner died under this command. */
  lost(why: string): void {
    if (this.closed) return;
    // it may still be running, orphaned; a command with PDEATHSIG is gone already
    if (this.pid !== undefined && !this.exited) {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    this.emit('error', new Error(`${why} while ${this.file} was running; it was not waited for (the next command starts a new spawner)`));
    // a handed pipe may be held by what the command left: it is not waited for either
    for (const s of this.stdio) if (s instanceof HandedPipe) s.destroy();
    this.finish(null, 'SIGKILL');
  }

  private finish(code: number | null, signal: string | null): void {
    if (this.closed) return;
    this.closed = true;
    const readers = this.stdio.filter((s, fd): s is Readable | Duplex => s !== null && fd !== 0);
    // a handed pipe ends when its socket does (output may still be in it); one never handed, here
    for (const s of readers) if (!s.readableEnded && !(s instanceof HandedPipe && s.attached)) s.push(null);
    // 'close' after the output is read, as Node's: callers read their last chunk before it
    const pending = readers.filter((s) => s.readableFlowing === true && !s.readableEnded && !s.destroyed);
    if (pending.length === 0) return void process.nextTick(() => this.emit('close', code, signal));
    let left = pending.length;
    const done = () => {
      if (--left === 0) this.emit('close', code, signal);
    };
    for (const s of pending) {
      s.once('end', done);
      s.once('close', () => {
        if (!s.readableEnded) done();
      });
    }
  }

  private stream(fd: number): Readable | Writable | Duplex {
    const id = this.id;
    const send = this.send;
    const write = (chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void) => {
      send({ t: 'write', id, fd, data: chunk });
      cb();
    };
    const final = (cb: (e?: Error | null) => void) => {
      send({ t: 'end', id, fd });
      cb();
    };
    const destroy = (err: Error | null, cb: (e?: Error | null) => void) => {
      if (!this.closed && !this.ended.has(fd)) send({ t: 'destroy', id, fd });
      cb(err);
    };
    if (fd === 0) return new Writable({ write, final, destroy });
    if (fd <= 2) return new Readable({ read() {}, destroy });
    return new Duplex({ read() {}, write, final, destroy });
  }
}
