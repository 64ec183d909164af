/**
 * The run's logs that grow by lines every turn (events.jsonl, model-calls.jsonl) are written
 * through an fd kept open per file: a line is one write instead of an open, a write and a close,
 * each a trip through libuv's thread pool, and a fast turn appends five or six lines. The bytes
 * and where they land are the same as with appendFile: one O_APPEND write each, in the page cache
 * when it returns, so a worker that dies after it loses nothing that appendFile would have kept.
 *
 * A line up to SYNC_IO_MAX_BYTES is written with the synchronous call when no larger line of the
 * file is still on its way: one write to the page cache, a few µs on the event loop, instead of a
 * trip through the thread pool. A larger one goes through the pool, after the lines before it.
 *
 * Before each line the path is checked to name the file the fd holds (two stats of inodes in
 * memory, no disk): a file removed, replaced or moved away since is opened again at the path, as
 * appendFile would. Lines to one file go in the order they were asked for. An fd unused for a
 * while is closed, and only so many are kept.
 */
import { closeSync, fstatSync, openSync, statSync, write, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { SYNC_IO_MAX_BYTES } from './sync-io.js';

interface Kept {
  fd: number | undefined;
  /** the larger writes to this file still on their way through the pool, one after another */
  queue: Promise<void>;
  pending: number;
  usedAt: number;
}

/** At most this many fds kept (a few per run in flight). */
const MAX_KEPT_APPENDS = 128;
/** An fd unused this long is closed. */
const KEPT_APPEND_IDLE_MS = 30_000;

const files = new Map<string, Kept>();
let sweeper: NodeJS.Timeout | undefined;
const writeAsync = promisify(write);

/** Appends `text` to `path` (made if missing, not its directory). */
export function appendKept(path: string, text: string): Promise<void> {
  let k = files.get(path);
  if (!k) {
    k = { fd: undefined, queue: Promise.resolve(), pending: 0, usedAt: 0 };
    files.set(path, k);
    if (files.size > MAX_KEPT_APPENDS) letGo(files.keys().next().value!);
    sweeper ??= setInterval(sweep, KEPT_APPEND_IDLE_MS).unref();
  } else {
    // the most recently used last: the first is the one let go when too many are kept
    files.delete(path);
    files.set(path, k);
  }
  k.usedAt = Date.now();
  const entry = k;
  const bytes = Buffer.from(text);
  if (entry.pending === 0 && bytes.length <= SYNC_IO_MAX_BYTES) {
    try {
      const fd = fdAt(entry, path);
      for (let at = 0; at < bytes.length;) at += wrote(writeSync(fd, bytes, at, bytes.length - at), path);
      return Promise.resolve();
    } catch (err) {
      forget(entry);
      return Promise.reject(err as Error);
    }
  }
  entry.pending++;
  const written = entry.queue.then(async () => {
    const fd = fdAt(entry, path);
    for (let at = 0; at < bytes.length;) at += wrote((await writeAsync(fd, bytes, at, bytes.length - at)).bytesWritten, path);
  });
  // a failed write (a full disk) leaves the next one to open the file afresh
  entry.queue = written.catch(() => forget(entry)).finally(() => entry.pending--);
  return written;
}

/** The fd open on the file `path` names now (opened again when it names another file). */
function fdAt(entry: Kept, path: string): number {
  if (entry.fd !== undefined && !at(entry.fd, path)) forget(entry);
  entry.fd ??= openSync(path, 'a');
  return entry.fd;
}

/** Whole, as appendFile writes: a short write is followed by the rest (or by its error). */
function wrote(n: number, path: string): number {
  if (n <= 0) throw new Error(`could not append to ${path}: nothing was written`);
  return n;
}

function forget(entry: Kept): void {
  if (entry.fd === undefined) return;
  try {
    closeSync(entry.fd);
  } catch {
    // closed already
  }
  entry.fd = undefined;
}

/** Whether `path` still names the file behind the fd. */
function at(fd: number, path: string): boolean {
  try {
    const held = fstatSync(fd);
    const named = statSync(path, { throwIfNoEntry: false });
    return named !== undefined && named.ino === held.ino && named.dev === held.dev;
  } catch {
    return false;
  }
}

function letGo(path: string): void {
  const k = files.get(path);
  if (!k) return;
  files.delete(path);
  // after the writes already asked for
  void k.queue.then(() => forget(k));
}

function sweep(): void {
  const old = Date.now() - KEPT_APPEND_IDLE_MS;
  for (const [path, k] of files) if (k.usedAt < old) letGo(path);
  if (files.size === 0 && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}
