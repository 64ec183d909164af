import { existsSync, lstatSync, readdirSync, readlinkSync, watch, type FSWatcher, type Stats } from 'node:fs';

/**
 * What of the host a command sees: an allowlist, not the whole filesystem minus a few masks. The
 * sandbox root is an empty tmpfs; these are bound read-only into it. Everything else — /home,
 * /root, /run, /var, /srv, /mnt, the user's checkouts and other repositories — does not exist
 * inside. Toolchains outside these directories are added by the caller (`extraReadOnly`).
 */
export const SYSTEM_DIRS = ['/usr', '/etc', '/opt'] as const;

/** On merged-/usr systems these are symlinks into /usr and are recreated as such; else bound. */
export const SYSTEM_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

/** Directories under which host files unreadable by others are searched for (see privateEntries). */
const PRIVATE_SCAN_DIRS = ['/etc', '/opt'] as const;

/**
 * Entries a scan visits at most. /etc and /opt hold ~1,200 entries on a Debian host (0.2 s cold,
 * 5-11 ms warm on the worker's event loop); a directory larger than this is not bound at all
 * rather than bound unscanned.
 */
export const PRIVATE_SCAN_LIMIT = 50_000;

export interface SystemMount {
  kind: 'ro-bind' | 'symlink';
  path: string;
  /** for a symlink: its target */
  target?: string;
}

export function systemMounts(skipped: readonly string[] = []): SystemMount[] {
  const out: SystemMount[] = [];
  for (const dir of SYSTEM_DIRS) if (isRealDir(dir) && !skipped.includes(dir)) out.push({ kind: 'ro-bind', path: dir });
  for (const p of SYSTEM_LINKS) {
    const st = lstatQuiet(p);
    if (!st) continue;
    if (st.isSymbolicLink()) out.push({ kind: 'symlink', path: p, target: readlinkSync(p) });
    else if (st.isDirectory()) out.push({ kind: 'ro-bind', path: p });
  }
  return out;
}

export interface PrivateEntries {
  /** files that others may not read: each is masked with an empty file */
  files: string[];
  /** directories that others may not enter: each becomes an empty read-only directory */
  dirs: string[];
  /** scan roots too large to scan: they are not bound at all */
  skipped: string[];
}

/**
 * Files in the bound system directories that the host keeps from other users (/etc/shadow, TLS
 * private keys, a database's pg_hba.conf, a root-only token under /opt). Commands run with the
 * worker's uid on the host, so when the worker is root the kernel would let them read these;
 * the sandbox hides them instead, which also holds for a worker that is not root.
 *
 * The scan is kept until anything in a scanned directory changes: every directory it read is
 * watched (inotify reports a new entry, a rename and a chmod alike), and the first notice drops
 * the result, so the next command scans again. Sandboxed commands cannot write these
 * directories; only the host can. A change made before this is called is always seen: the kernel
 * queues its notice at once, and the two event-loop turns awaited first pass through libuv's poll
 * phase, which reads the queue and drops the kept scan. Where a watch cannot be set up (no
 * inotify, its limit reached) nothing is kept and every command scans, as before.
 */
export async function privateEntries(): Promise<PrivateEntries> {
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  if (kept) return kept;
  const visited: string[] = [];
  const value: PrivateEntries = { files: [], dirs: [], skipped: [] };
  for (const root of PRIVATE_SCAN_DIRS) {
    if (!isRealDir(root)) continue;
    const found = scanPrivate(root, visited);
    if (!found) value.skipped.push(root);
    else {
      value.files.push(...found.files);
      value.dirs.push(...found.dirs);
    }
  }
  if (watchAll(visited)) kept = value;
  return value;
}

let kept: PrivateEntries | undefined;
let watchers: FSWatcher[] = [];

function forget(): void {
  kept = undefined;
  for (const w of watchers) w.close();
  watchers = [];
}

/** Watches every directory; false (and nothing watched) if any one cannot be. */
function watchAll(dirs: readonly string[]): boolean {
  forget();
  try {
    for (const dir of dirs) {
      // not persistent: a watch must not keep a finished worker or test process alive
      const w = watch(dir, { persistent: false }, forget);
      w.on('error', forget);
      watchers.push(w);
    }
    return true;
  } catch {
    forget();
    return false;
  }
}

/** Tests: the next command scans again. */
export function forgetPrivateEntries(): void {
  forget();
}

function scanPrivate(root: string, visited: string[]): { files: string[]; dirs: string[] } | undefined {
  const files: string[] = [];
  const dirs: string[] = [];
  const stack = [root];
  let seen = 0;
  while (stack.length) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      dirs.push(dir);
      continue;
    }
    visited.push(dir);
    for (const name of names) {
      if (++seen > PRIVATE_SCAN_LIMIT) return undefined;
      const p = `${dir}/${name}`;
      const st = lstatQuiet(p);
      if (!st || st.isSymbolicLink()) continue;
      if (st.isDirectory()) {
        if ((st.mode & 0o005) !== 0o005) dirs.push(p);
        else stack.push(p);
      } else if ((st.mode & 0o004) === 0) files.push(p);
    }
  }
  return { files, dirs };
}

function lstatQuiet(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

function isRealDir(p: string): boolean {
  const st = lstatQuiet(p);
  return st !== undefined && st.isDirectory() && existsSync(p);
}
