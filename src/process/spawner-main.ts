/**
 * The spawner: a small Node process the worker starts once (spawn.ts) to start its commands.
 * fork() copies the page tables of the process that calls it, and Node's spawn blocks until the
 * child has exec'd: ~25 ms in a 300 MB worker, 3–5 ms here, and here it stops no event loop that
 * Temporal's polls and activities need. Imports only Node built-ins, so it starts in ~40 ms.
 *
 * It trusts its parent (the worker, same uid) and nothing else: every request names the program,
 * argv, cwd and the whole environment; the spawner's own environment reaches no command.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { FromSpawner, SpawnRequest, ToSpawner } from './protocol.js';

/** Output handed to the channel and not yet written: past this, commands' pipes are paused. */
const HIGH_WATER = 8 * 1024 * 1024;

const children = new Map<number, ChildProcess>();
/** commands started in their own process group: on the worker's death the whole group goes */
const leaders = new WeakSet<ChildProcess>();
const paused = new Set<Readable>();
let unsent = 0;

function send(m: FromSpawner, bytes = 0): void {
  if (!process.connected) return;
  unsent += bytes;
  process.send!(m, undefined, undefined, () => {
    unsent -= bytes;
    if (unsent < HIGH_WATER / 2 && paused.size > 0) {
      for (const s of paused) s.resume();
      paused.clear();
    }
  });
}

function start(r: SpawnRequest): void {
  const opened: number[] = [];
  let child: ChildProcess;
  try {
    const stdio = r.stdio.map((s) => {
      if (typeof s === 'string') return s;
      const fd = openSync(s.file, 'r');
      opened.push(fd);
      return fd;
    });
    child = spawn(r.file, r.args, {
      ...(r.cwd !== undefined ? { cwd: r.cwd } : {}),
      env: r.env,
      detached: r.detached,
      stdio: stdio as StdioOptions,
      ...(r.timeout !== undefined ? { timeout: r.timeout } : {}),
      ...(r.killSignal !== undefined ? { killSignal: r.killSignal as NodeJS.Signals } : {}),
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    send({ t: 'error', id: r.id, message: e.message, ...(e.code ? { code: e.code } : {}) });
    send({ t: 'close', id: r.id, code: null, signal: null });
    return;
  } finally {
    // the command holds its own copy from here on
    for (const fd of opened) closeSync(fd);
  }
  children.set(r.id, child);
  if (r.detached) leaders.add(child);
  if (child.pid !== undefined) send({ t: 'spawned', id: r.id, pid: child.pid });
  const handOver = new Set(r.handOver ?? []);
  r.stdio.forEach((s, fd) => {
    const stream = child.stdio[fd];
    if (s !== 'pipe' || !stream) return;
    stream.on('error', () => undefined); // EPIPE on a command that stopped reading is its business
    if (handOver.has(fd)) return hand(r.id, fd, stream as Socket);
    if (fd === 0) return;
    const readable = stream as Readable;
    readable.on('data', (data: Buffer) => {
      send({ t: 'data', id: r.id, fd, data }, data.length);
      if (unsent > HIGH_WATER) {
        readable.pause();
        paused.add(readable);
      }
    });
    readable.on('end', () => send({ t: 'eof', id: r.id, fd }));
    readable.on('close', () => paused.delete(readable));
  });
  child.on('error', (e: NodeJS.ErrnoException) => send({ t: 'error', id: r.id, message: e.message, ...(e.code ? { code: e.code } : {}) }));
  child.on('exit', (code, signal) => send({ t: 'exit', id: r.id, code, signal }));
  child.on('close', (code, signal) => {
    children.delete(r.id);
    send({ t: 'close', id: r.id, code, signal });
  });
}

/** The pipe goes to the worker whole; the spawner lets go of its own copy once it is sent (the child's 'close' waits for that). */
function hand(id: number, fd: number, socket: Socket): void {
  const m: FromSpawner = { t: 'handle', id, fd };
  if (!process.connected) return void socket.destroy();
  process.send!(m, socket, undefined, () => socket.destroy());
}

function signal(child: ChildProcess, sig: string): void {
  try {
    child.kill(sig as NodeJS.Signals);
  } catch {
    /* an unknown signal name: the worker only sends real ones */
  }
}

process.on('message', (m: ToSpawner) => {
  if (m.t === 'spawn') return start(m);
  const child = children.get(m.id);
  if (!child) return;
  if (m.t === 'kill') return signal(child, m.signal);
  const stream = child.stdio[m.fd];
  if (!stream) return;
  if (m.t === 'write') (stream as Writable).write(m.data);
  else if (m.t === 'end') (stream as Writable).end();
  else stream.destroy();
});

// The worker is gone (or let go of us): what it started goes too, groups and all.
process.on('disconnect', () => {
  for (const child of children.values()) {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(leaders.has(child) ? -child.pid : child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  process.exit(0);
});
