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
 * The worktree's credentials, by the policy's sensitive globs (`.env*`, keys, `.npmrc`...), found
 * on disk at each command, so a file that `include` copied in or setup created is masked too.
 * Masked files read as empty inside the sandbox and cannot be written, renamed or hard-linked
 * (a bind mount is another mount: link(2) fails with EXDEV); an existing hard link to one is
 * masked as well. Symlinks are left alone: their target
 * is either in the worktree, and masked itself, or outside, where the sandbox does not see it.
 */
export function sensitiveEntries(workspace: string, config?: SensitiveConfig): SensitiveEntries {
  const out: SensitiveEntries = { files: [], dirs: [] };
  const regular: string[] = [];
  const stack: string[] = [''];
  let seen = 0;
  while (stack.length) {
    const rel = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(rel ? `${workspace}/${rel}` : workspace, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (++seen > WORKTREE_SCAN_LIMIT) {
        throw new SandboxSpawnError(
          `the worktree has more than ${WORKTREE_SCAN_LIMIT} files outside node_modules and .git, too many to check for credentials before each command; nothing was run`,
        );
      }
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (SKIP_DIRS.has(e.name)) continue;
        if (isSensitivePath(`${p}/x`, config)) out.dirs.push(`${workspace}/${p}`);
        else stack.push(p);
      } else if (e.isFile()) {
        if (isSensitivePath(p, config)) out.files.push(`${workspace}/${p}`);
        else regular.push(`${workspace}/${p}`);
      }
    }
  }
  out.files.push(...hardLinksTo(out.files, regular));
  return out;
}

/**
 * A hard link made earlier (by setup, or before masking existed) shares the secret's inode under
 * an ordinary name. Only when some secret has more than one link are the other files looked at.
 */
function hardLinksTo(secrets: string[], others: string[]): string[] {
  const inodes = new Set<string>();
  for (const f of secrets) {
    const st = lstatQuiet(f);
    if (st && st.nlink > 1) inodes.add(`${st.dev}:${st.ino}`);
  }
  if (inodes.size === 0) return [];
  return others.filter((f) => {
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
