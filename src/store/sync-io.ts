import { statSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/**
 * Run files up to this size are read and written with the synchronous calls. A file this small
 * is in the page cache, and each call costs a few µs on the event loop, where the promise API
 * costs a trip through libuv's thread pool per call (open, read or write, close, rename, stat),
 * and a turn writes and reads several such files. The bytes written, their order and the renames
 * are the same either way. Larger files (a long conversation) keep the pool: a megabyte copied
 * on the event loop would hold up every other run the worker hosts.
 */
export const SYNC_IO_MAX_BYTES = 64 * 1024;

/** The file's text, synchronously when it is small (`size`: its size, when a stat just gave it); ENOENT as the error when there is none. */
export async function readRunText(path: string, size?: number): Promise<string> {
  const bytes = size ?? statSync(path).size;
  return bytes <= SYNC_IO_MAX_BYTES ? readFileSync(path, 'utf8') : readFile(path, 'utf8');
}
