import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { KilnError } from '../shared/errors.js';
import { isInside, resolveWorkspacePath } from '../policy/paths.js';

export { isInside };

/**
 * File access for tools that run OUTSIDE the sandbox. A sandboxed command can plant
 * symlinks anywhere in the worktree, so a path that looks inside may not be: every open
 * goes through a directory descriptor whose real path was checked, the last component is
 * opened with O_NOFOLLOW, and the opened file's real path is checked again.
 *
 * On Linux the directory descriptor is used through /proc/self/fd/<fd>/<name>: that
 * magic link pins the directory that was checked, so swapping a parent for a symlink
 * after the check changes nothing.
 */

export type PathErrorCode = 'invalid' | 'outside' | 'symlink' | 'not_found' | 'not_file' | 'exists' | 'too_large' | 'protected';

/** A path the tools refuse (outside, missing, protected...): the same call is refused again. */
export class WorkspacePathError extends KilnError {
  readonly retryable = false;
  constructor(
    readonly code: PathErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WorkspacePathError';
  }
}

/** Where a tool opens a workspace path: checked physically first, then opened without following. */
export interface WorkspaceTarget {
  /** realpath of the workspace */
  root: string;
  /** absolute path, lexically resolved under root: the open itself walks it without following symlinks */
  abs: string;
  /** path relative to root, with forward slashes, as the agent spelled it */
  rel: string;
}

const PROC_FD = '/proc/self/fd';
const hasProcFd = fs.existsSync(PROC_FD);

export function workspaceRealpath(workspace: string): string {
  try {
    return fs.realpathSync(workspace);
  } catch {
    throw new WorkspacePathError('not_found', `workspace ${workspace} does not exist`);
  }
}

/**
 * The policy's own resolver decides whether `p` is inside (symlinks followed, so a link out of
 * the worktree is refused here exactly as the policy refuses it); the target keeps the path as
 * spelled, because the opens below walk it through checked directory descriptors and refuse a
 * final symlink rather than following it. Tools take relative paths only.
 */
export function workspaceTarget(workspace: string, p: string): WorkspaceTarget {
  if (typeof p !== 'string' || p.trim() === '') {
    throw new WorkspacePathError('invalid', 'path is empty');
  }
  if (p.includes('\0')) throw new WorkspacePathError('invalid', 'path contains a NUL byte');
  if (path.isAbsolute(p)) {
    throw new WorkspacePathError('invalid', `path ${p} is absolute; give a path relative to the workspace root, e.g. src/index.ts`);
  }
  const root = workspaceRealpath(workspace);
  const abs = path.resolve(root, p);
  if (!isInside(root, abs)) throw new WorkspacePathError('outside', `path ${p} escapes the workspace`);
  const target = { root, abs, rel: path.relative(root, abs).split(path.sep).join('/') };
  const checked = resolveWorkspacePath(root, p);
  if (!checked.ok) {
    // said the way the open-time checks say it, so the agent hears one wording whichever check fires
    if (isSymlink(abs)) throw symlinkError(root, target, abs);
    throw new WorkspacePathError('outside', `${target.rel} leads outside the workspace through a symlink`);
  }
  return target;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function fdRealpath(fd: number): string | null {
  if (!hasProcFd) return null;
  return fs.readlinkSync(`${PROC_FD}/${fd}`);
}

interface OpenedDir {
  fd: number;
  /** the path through which entries of this very directory are reached */
  entry(name: string): string;
  close(): void;
}

function openDirInside(root: string, absDir: string, shownAs: string): OpenedDir {
  let fd: number;
  try {
    fd = fs.openSync(absDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new WorkspacePathError('not_found', `${shownAs} does not exist`);
    if (code === 'ENOTDIR') {
      throw new WorkspacePathError('not_found', `${shownAs} does not exist (a parent is not a directory)`);
    }
    throw e;
  }
  try {
    const real = fdRealpath(fd) ?? fs.realpathSync(absDir);
    if (!isInside(root, real)) {
      throw new WorkspacePathError('outside', `${shownAs} leads outside the workspace through a symlink`);
    }
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  return {
    fd,
    entry: (name) => (hasProcFd ? `${PROC_FD}/${fd}/${name}` : path.join(absDir, name)),
    close: () => fs.closeSync(fd),
  };
}

function symlinkError(root: string, r: WorkspaceTarget, linkPath: string): WorkspacePathError {
  let hint = 'it points outside the workspace';
  try {
    const target = fs.realpathSync(linkPath);
    if (isInside(root, target)) {
      hint = `read its target ${path.relative(root, target).split(path.sep).join('/')} instead`;
    }
  } catch {
    hint = 'its target does not exist';
  }
  return new WorkspacePathError('symlink', `${r.rel} is a symbolic link; ${hint}`);
}

export interface ReadResult {
  rel: string;
  data: Buffer;
  /** permission bits */
  mode: number;
}

export function safeReadFile(workspace: string, p: string, maxBytes = 50 * 1024 * 1024): ReadResult {
  const r = workspaceTarget(workspace, p);
  if (r.abs === r.root) throw new WorkspacePathError('not_file', 'the workspace root is a directory, not a file');
  const dir = openDirInside(r.root, path.dirname(r.abs), r.rel);
  try {
    const entry = dir.entry(path.basename(r.abs));
    let fd: number;
    try {
      fd = fs.openSync(entry, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new WorkspacePathError('not_found', `${r.rel} does not exist`);
      if (code === 'ELOOP') throw symlinkError(r.root, r, entry);
      throw e;
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) {
        throw new WorkspacePathError('not_file', `${r.rel} is ${st.isDirectory() ? 'a directory' : 'not a regular file'}`);
      }
      const real = fdRealpath(fd);
      if (real !== null && !isInside(r.root, real)) {
        throw new WorkspacePathError('outside', `${r.rel} resolves outside the workspace`);
      }
      if (st.size > maxBytes) {
        throw new WorkspacePathError('too_large', `${r.rel} is ${st.size} bytes, more than the ${maxBytes}-byte limit`);
      }
      return { rel: r.rel, data: fs.readFileSync(fd), mode: st.mode & 0o7777 };
    } finally {
      fs.closeSync(fd);
    }
  } finally {
    dir.close();
  }
}

export type EntryKind = 'file' | 'dir' | 'symlink' | 'other';

/** What sits at `p` without following a final symlink; null when nothing does. */
export function entryKind(workspace: string, p: string): EntryKind | null {
  const r = workspaceTarget(workspace, p);
  if (r.abs === r.root) return 'dir';
  let dir: OpenedDir;
  try {
    dir = openDirInside(r.root, path.dirname(r.abs), r.rel);
  } catch (e) {
    if (e instanceof WorkspacePathError && e.code === 'not_found') return null;
    throw e;
  }
  try {
    const st = fs.lstatSync(dir.entry(path.basename(r.abs)));
    if (st.isSymbolicLink()) return 'symlink';
    if (st.isFile()) return 'file';
    if (st.isDirectory()) return 'dir';
    return 'other';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  } finally {
    dir.close();
  }
}

/** mkdir -p, after checking that the deepest existing ancestor really is inside. */
function ensureDirInside(root: string, absDir: string, shownAs: string): void {
  let existing = absDir;
  while (!fs.existsSync(existing)) {
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  let real: string;
  try {
    real = fs.realpathSync(existing);
  } catch {
    throw new WorkspacePathError('outside', `${shownAs}: a parent directory is a dangling symlink`);
  }
  if (!isInside(root, real)) {
    throw new WorkspacePathError('outside', `${shownAs} leads outside the workspace through a symlink`);
  }
  if (existing === absDir) return;
  try {
    fs.mkdirSync(absDir, { recursive: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOTDIR' || (e as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new WorkspacePathError('not_found', `cannot create the directories of ${shownAs}: a parent is a file`);
    }
    throw e;
  }
}

export interface WriteOptions {
  /** fail with code "exists" when anything is at the path (atomic: link(2), not a check) */
  createOnly?: boolean;
  /** create missing parent directories */
  mkdirs?: boolean;
}

/**
 * Write through a temporary file in the same directory and rename it over the target:
 * a reader never sees half a file, a crash leaves the old file, and a symlink planted at
 * the target is replaced rather than followed (we refuse it before that anyway).
 */
export function safeWriteFile(workspace: string, p: string, data: string | Buffer, opts: WriteOptions = {}): void {
  const r = workspaceTarget(workspace, p);
  if (r.abs === r.root) throw new WorkspacePathError('not_file', 'the workspace root is a directory, not a file');
  // Git hooks and config run outside the sandbox whenever Kiln itself calls git.
  if (r.rel === '.git' || r.rel.startsWith('.git/')) {
    throw new WorkspacePathError('protected', `refusing to write ${r.rel}: files under .git are never edited by tools`);
  }
  const absDir = path.dirname(r.abs);
  if (opts.mkdirs) ensureDirInside(r.root, absDir, r.rel);
  const dir = openDirInside(r.root, absDir, r.rel);
  const name = path.basename(r.abs);
  const target = dir.entry(name);
  const tmpName = `.${name}.kiln-${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const tmp = dir.entry(tmpName);
  let tmpCreated = false;
  try {
    let keepMode: number | null = null;
    try {
      const st = fs.lstatSync(target);
      if (opts.createOnly) throw new WorkspacePathError('exists', `${r.rel} already exists`);
      if (st.isSymbolicLink()) {
        throw new WorkspacePathError('symlink', `${r.rel} is a symbolic link; refusing to write through it`);
      }
      if (!st.isFile()) throw new WorkspacePathError('not_file', `${r.rel} is not a regular file`);
      keepMode = st.mode & 0o7777;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o666);
    tmpCreated = true;
    try {
      fs.writeFileSync(fd, data);
      if (keepMode !== null) fs.fchmodSync(fd, keepMode);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    if (opts.createOnly) {
      try {
        fs.linkSync(tmp, target);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new WorkspacePathError('exists', `${r.rel} already exists`);
        }
        throw e;
      }
      fs.unlinkSync(tmp);
    } else {
      fs.renameSync(tmp, target);
    }
    tmpCreated = false;
    try {
      fs.fsyncSync(dir.fd);
    } catch {
      // Durability of the rename is best effort; some filesystems refuse fsync on a directory.
    }
  } finally {
    if (tmpCreated) {
      try {
        fs.unlinkSync(tmp);
      } catch {
        // already gone
      }
    }
    dir.close();
  }
}
