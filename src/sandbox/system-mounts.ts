import { existsSync, lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';

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
 * a few ms warm, so it runs before every command: a private file made a second ago is hidden too);
 * a directory larger than this is not bound at all rather than bound unscanned.
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
 */
export function privateEntries(): PrivateEntries {
  const value: PrivateEntries = { files: [], dirs: [], skipped: [] };
  for (const root of PRIVATE_SCAN_DIRS) {
    if (!isRealDir(root)) continue;
    const found = scanPrivate(root);
    if (!found) value.skipped.push(root);
    else {
      value.files.push(...found.files);
      value.dirs.push(...found.dirs);
    }
  }
  return value;
}

function scanPrivate(root: string): { files: string[]; dirs: string[] } | undefined {
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
