/**
 * The run's logs that grow by lines every turn (events.jsonl, model-calls.jsonl) are written
 * through an fd kept open per file: a line is one write instead of an open, a write and a close,
 * each a trip through libuv's thread pool, and a fast turn appends five or six lines. The bytes
 * and where they land are the same as with appendFile: one O_APPEND write each, in the page cache
 * when it returns, so a worker that dies after it loses nothing that appendFile would have kept.
 *
 * Before each line the path is checked to name the file the fd holds (two stats of inodes in
 * memory, no disk): a file removed, replaced or moved away since is opened again at the path, as
 * appendFile would. Lines to one file go in the order they were asked for. An fd unused for a
 * while is closed, and only so many are kept.
 */
import { fstatSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

interface Kept {
  fh: FileHandle | undefined;
  /** the writes to this file, one after another */
  queue: Promise<void>;
  usedAt: number;
}

/** At most this many fds kept (a few per run in flight). */
const MAX_KEPT_APPENDS = 128;
/** An fd unused this long is closed. */
const KEPT_APPEND_IDLE_MS = 30_000;

const files = new Map<string, Kept>();
let sweeper: NodeJS.Timeout | undefined;

/** Appends `text` to `path` (made if missing, not its directory). */
export function appendKept(path: string, text: string): Promise<void> {
  let k = files.get(path);
  if (!k) {
    k = { fh: undefined, queue: Promise.resolve(), usedAt: 0 };
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
  const write = entry.queue.then(async () => {
    if (entry.fh && !at(entry.fh, path)) {
      await entry.fh.close().catch(() => undefined);
      entry.fh = undefined;
    }
    entry.fh ??= await open(path, 'a');
    // whole, as appendFile writes: a short write is followed by the rest (or by its error)
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length;) {
      const { bytesWritten } = await entry.fh.write(bytes, at, bytes.length - at);
      if (bytesWritten <= 0) throw new Error(`could not append to ${path}: nothing was written`);
      at += bytesWritten;
    }
  });
  // a failed write (a full disk) leaves the next one to open the file afresh
  entry.queue = write.catch(async () => {
    await entry.fh?.close().catch(() => undefined);
    entry.fh = undefined;
  });
  return write;
}

/** Whether `path` still names the file behind the fd. */
function at(fh: FileHandle, path: string): boolean {
  try {
    const held = fstatSync(fh.fd);
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
  void k.queue.then(() => k.fh?.close().catch(() => undefined));
}

function sweep(): void {
  const old = Date.now() - KEPT_APPEND_IDLE_MS;
  for (const [path, k] of files) if (k.usedAt < old) letGo(path);
  if (files.size === 0 && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}
