import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ownedTempDir } from '../process/owned-dirs.js';

let dir: string | undefined;
const files = new Map<string, string>();

/**
 * The process's scratch directories, removed when it exits (one was left per worker, test and
 * `kiln run` process; 268 in /tmp after one session's tests). Kept on the process itself, so
 * that every copy of this module (a test runner loads it once per file) shares one exit handler.
 * A process killed with SIGKILL leaves its directory behind, for the next one to remove
 * (process/owned-dirs.ts).
 */
const REGISTRY = Symbol.for('kiln.sandbox.scratch-dirs');

function removedAtExit(d: string): string {
  const holder = process as unknown as Record<symbol, Set<string> | undefined>;
  let dirs = holder[REGISTRY];
  if (!dirs) {
    const all = new Set<string>();
    holder[REGISTRY] = dirs = all;
    process.once('exit', () => {
      for (const x of all) rmSync(x, { recursive: true, force: true });
    });
  }
  dirs.add(d);
  return d;
}

/**
 * A read-only host file the sandbox binds in (the empty file over masked secrets, slirp's
 * resolv.conf, the seccomp program), written once per worker process in a private directory.
 */
export function scratchFile(name: string, content: string | Buffer): string {
  const known = files.get(name);
  if (known) return known;
  dir ??= removedAtExit(ownedTempDir('kiln-sandbox-'));
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o444 });
  files.set(name, path);
  return path;
}

/** Bound over each masked file: it reads as empty, and as a bind mount it cannot be written, renamed or hard-linked. */
export function emptyFile(): string {
  return scratchFile('empty', '');
}
