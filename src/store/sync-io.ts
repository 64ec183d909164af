/**
 * Run files up to this size are read and written with the synchronous calls. A file this small
 * is in the page cache, and each call costs a few µs on the event loop, where the promise API
 * costs a trip through libuv's thread pool per call (open, read or write, close, rename, stat),
 * and a turn writes and reads several such files. The bytes written, their order and the renames
 * are the same either way. Larger files (a long conversation) keep the pool: a megabyte copied
 * on the event loop would hold up every other run the worker hosts.
 */
export const SYNC_IO_MAX_BYTES = 64 * 1024;
