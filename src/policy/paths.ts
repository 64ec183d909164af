import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

export type ResolvedPath = { ok: true; abs: string; rel: string } | { ok: false; rule: string; reason: string; abs?: string };

// Linux gives up after 40 symlinks (ELOOP); so do we.
const MAX_LINKS = 40;

function realWorkspace(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch {
    return resolve(workspace);
  }
}

/**
 * Follows `p` the way the kernel would: each existing component through its
 * symlink, `..` applied to the real parent, and the part that does not exist yet
 * appended as written. Returns the absolute result, or null on a symlink loop.
 */
export function physicalPath(p: string): string | null {
  // split the path as written: normalising first would apply `..` lexically, not physically
  const parts = (isAbsolute(p) ? p : process.cwd() + sep + p).split(sep).filter(Boolean);
  let cur: string = sep;
  let links = 0;
  let missing = false;
  while (parts.length > 0) {
    const part = parts.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, part);
    if (missing) {
      cur = next;
      continue;
    }
    let st;
    try {
      st = lstatSync(next);
    } catch {
      missing = true;
      cur = next;
      continue;
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return null;
      const target = readlinkSync(next);
      const targetParts = (isAbsolute(target) ? target : join(cur, target)).split(sep).filter(Boolean);
      parts.unshift(...targetParts);
      cur = sep;
      continue;
    }
    cur = next;
  }
  return cur;
}

/** Separator-aware: `/repo-evil` is not inside `/repo`. */
export function isInside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Resolves a path the agent gave against the worktree and decides whether it is
 * inside. Symlinks are followed (also dangling ones and those in missing parents'
 * ancestors), so a link that points out of the worktree is outside.
 */
export function resolveWorkspacePath(workspace: string, p: string): ResolvedPath {
  if (typeof p !== 'string' || p.length === 0) {
    return { ok: false, rule: 'input.invalid', reason: 'The path is empty; give a path relative to the repository root.' };
  }
  if (p.includes('\0')) {
    return { ok: false, rule: 'path.invalid', reason: 'The path contains a NUL byte.' };
  }
  const root = realWorkspace(workspace);
  const lexical = isAbsolute(p) ? resolve(p) : resolve(root, p);
  const lexicalRoot = resolve(workspace);
  const lexicallyInside = isInside(root, lexical) || isInside(lexicalRoot, lexical);
  // an absolute path spelled with the workspace's unresolved name still names the worktree
  let start = isAbsolute(p) ? p : root + sep + p;
  if (isAbsolute(p) && isInside(lexicalRoot, lexical) && !isInside(root, lexical)) {
    start = root + sep + p.slice(lexicalRoot.length);
  }
  const phys = physicalPath(start);
  if (phys === null) {
    return { ok: false, rule: 'path.symlink-loop', reason: `${p} is a symlink loop.` };
  }
  if (!isInside(root, phys)) {
    if (lexicallyInside && !p.split(/[\\/]/).includes('..')) {
      return {
        ok: false,
        rule: 'path.symlink-escape',
        // where it leads is a host path: not named in a reason the model reads
        reason: `${p} is a symlink that leads outside the repository; only files inside the repository can be used.`,
        abs: phys,
      };
    }
    return {
      ok: false,
      rule: 'path.outside-workspace',
      reason: `${p} is outside the repository; use a path relative to the repository root.`,
      abs: phys,
    };
  }
  return { ok: true, abs: phys, rel: relative(root, phys).split(sep).join('/') };
}
