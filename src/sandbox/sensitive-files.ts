import { lstatSync, readdirSync } from 'node:fs';
import { isSensitivePath } from '../policy/globs.js';
import type { PolicyConfig } from '../policy/config.js';
import { SandboxSpawnError } from './errors.js';

export type SensitiveConfig = Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>;

/**
 * Directories not searched for secrets: git's own (protected separately) and installed
 * dependencies, which setup wrote and which hold no secret of the user's.
 */
const SKIP_DIRS = new Set(['.git', 'node_modules']);

/**
 * Entries visited at most. This repository (without node_modules) has ~1,000; a worktree larger
 * than this cannot be proven free of unmasked secrets, so the command is refused, not run.
 */
export const WORKTREE_SCAN_LIMIT = 200_000;

export interface SensitiveEntries {
  /** absolute paths of regular files to mask */
  files: string[];
  /** absolute paths of directories whose whole content is sensitive (`.ssh/`, `.aws/`) */
  dirs: string[];
}

/**
 * What one directory held at its last scan, kept while its ctime and inode stay the same: a
 * directory's entries cannot be added, removed or renamed without its ctime moving, and nobody
 * can set a ctime back (utimensat sets it to now). Matching every path of a 50,000-file worktree
 * against the globs took ~200 ms of the worker's main thread before each command; unchanged
 * directories now cost one stat.
 */
interface DirScan {
  ino: bigint;
  ctimeNs: bigint;
  /** its ctime was older than the scan by RACY_MS: the same ctime later means the same entries */
  settled: boolean;
  /** entries counted towards WORKTREE_SCAN_LIMIT */
  count: number;
  files: string[];
  dirs: string[];
  regular: string[];
  subdirs: string[];
}

/**
 * A directory changed this close before its scan may change again within the same tick of the
 * filesystem's clock, leaving the same ctime: such a scan is not reused, the directory is read
 * again next time (git's "racy" rule for its index). Assumes the filesystem's clock is within this
 * of the worker's.
 */
export const RACY_MS = 2000;
/** worktrees (and policies) whose scans are kept, least recently used dropped first */
const MAX_WORKTREES = 16;
const scans = new Map<string, Map<string, DirScan>>();

function statDir(path: string): { ino: bigint; ctimeNs: bigint } | undefined {
  try {
    const st = lstatSync(path, { bigint: true });
    return st.isDirectory() ? { ino: st.ino, ctimeNs: st.ctimeNs } : undefined;
  } catch {
    return undefined;
  }
}

function scanDir(workspace: string, rel: string, config: SensitiveConfig | undefined): DirScan | undefined {
  const scannedAt = BigInt(Date.now() - RACY_MS) * 1_000_000n;
  // the stat before the read: a change in between leaves a ctime that the next stat will not match
  const before = statDir(rel ? `${workspace}/${rel}` : workspace);
  if (!before) return undefined;
  let entries;
  try {
    entries = readdirSync(rel ? `${workspace}/${rel}` : workspace, { withFileTypes: true });
  } catch {
    return undefined;
  }
  const out: DirScan = { ...before, settled: before.ctimeNs < scannedAt, count: entries.length, files: [], dirs: [], regular: [], subdirs: [] };
  for (const e of entries) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (SKIP_DIRS.has(e.name)) continue;
      if (isSensitivePath(`${p}/x`, config)) out.dirs.push(p);
      else out.subdirs.push(p);
    } else if (e.isFile()) {
      if (isSensitivePath(p, config)) out.files.push(p);
      else out.regular.push(p);
    }
  }
  return out;
}

/**
 * The worktree's credentials, by the policy's sensitive globs (`.env*`, keys, `.npmrc`...), found
 * on disk at each command, so a file that `include` copied in or setup created is masked too.
 * Masked files read as empty inside the sandbox and cannot be written, renamed or hard-linked
 * (a bind mount is another mount: link(2) fails with EXDEV); an existing hard link to one is
 * masked as well. Symlinks are left alone: their target
 * is either in the worktree, and masked itself, or outside, where the sandbox does not see it.
 */
export function sensitiveEntries(workspace: string, config?: SensitiveConfig): SensitiveEntries {
  const key = `${workspace}\0${JSON.stringify([config?.sensitive ?? [], config?.allowSensitive ?? []])}`;
  const last = scans.get(key) ?? new Map<string, DirScan>();
  scans.delete(key);
  const now = new Map<string, DirScan>();
  const out: SensitiveEntries = { files: [], dirs: [] };
  const stack: string[] = [''];
  let seen = 0;
  while (stack.length) {
    const rel = stack.pop()!;
    const kept = last.get(rel);
    const st = kept?.settled && statDir(rel ? `${workspace}/${rel}` : workspace);
    const dir = kept?.settled && st && st.ino === kept.ino && st.ctimeNs === kept.ctimeNs ? kept : scanDir(workspace, rel, config);
    if (!dir) continue;
    seen += dir.count;
    if (seen > WORKTREE_SCAN_LIMIT) {
      throw new SandboxSpawnError(
        `the worktree has more than ${WORKTREE_SCAN_LIMIT} files outside node_modules and .git, too many to check for credentials before each command; nothing was run`,
      );
    }
    now.set(rel, dir);
    for (const p of dir.files) out.files.push(`${workspace}/${p}`);
    for (const p of dir.dirs) out.dirs.push(`${workspace}/${p}`);
    stack.push(...dir.subdirs);
  }
  scans.set(key, now);
  if (scans.size > MAX_WORKTREES) scans.delete(scans.keys().next().value!);
  out.files.push(...hardLinksTo(out.files, () => [...now.values()].flatMap((d) => d.regular.map((p) => `${workspace}/${p}`))));
  return out;
}

/**
 * A hard link made earlier (by setup, or before masking existed) shares the secret's inode under
 * an ordinary name. Only when some secret has more than one link are the other files looked at.
 */
function hardLinksTo(secrets: string[], others: () => string[]): string[] {
  const inodes = new Set<string>();
  for (const f of secrets) {
    const st = lstatQuiet(f);
    if (st && st.nlink > 1) inodes.add(`${st.dev}:${st.ino}`);
  }
  if (inodes.size === 0) return [];
  return others().filter((f) => {
    const st = lstatQuiet(f);
    return st !== undefined && st.nlink > 1 && inodes.has(`${st.dev}:${st.ino}`);
  });
}

function lstatQuiet(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/**
 * Host paths linked into the worktree (`.kiln/config` link) are bound read-only; one that is a
 * credential itself (`link: [".env"]`) is not bound at all, so the symlink inside dangles.
 */
export function withoutSensitive(paths: readonly string[], config?: SensitiveConfig): string[] {
  return paths.filter((p) => !isSensitivePath(p, config));
}
