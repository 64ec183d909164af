import { existsSync, lstatSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { toolchainBinds } from './toolchains.js';

/** Directories that hold the user's secrets or host services; each gets an empty tmpfs on top. */
const MASKED_DIRS = ['/home', '/root', '/run'] as const;

export interface BwrapArgsInput {
  workspace: string;
  network: boolean;
  env: Record<string, string>;
  home: string;
  shell: string;
  command: string;
  tmpfsBytes: number;
  /** outside paths bound read-only after the masks (absolute, existing) */
  readOnlyPaths?: string[];
  /** a host folder of warm caches, bound read-write at SANDBOX_CACHE (see toolchains.ts) */
  cacheDir?: string;
  /** pass bwrap's JSON status on this fd so a sandbox that never started is told apart from a failing command */
  statusFd?: number;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isUnder(child: string, parent: string): boolean {
  return parent === '/' || child === parent || child.startsWith(`${parent}/`);
}

/**
 * A git directory we may re-bind read-only on top of the sandbox. The worktree's `.git` file is
 * writable by whatever ran in the worktree before, so its target is checked: it must look like a
 * git directory, and must not be `/`, a masked directory or an ancestor of the worktree — binding
 * one of those would undo the masks or make the whole worktree read-only.
 */
function acceptableGitDir(p: string, workspace: string): boolean {
  if (!isAbsolute(p) || p === '/' || (MASKED_DIRS as readonly string[]).includes(p) || p === '/tmp') return false;
  if (isUnder(workspace, p)) return false;
  return isDir(p) && existsSync(join(p, 'HEAD'));
}

function readPointer(file: string, prefix: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (prefix === '') return text;
    return text.startsWith(prefix) ? text.slice(prefix.length).trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Paths to bind read-only over the writable worktree so that git metadata cannot be changed from
 * inside: the worktree's `.git` (a directory in a plain checkout, a file in a linked worktree),
 * and for a linked worktree the directory it points to and the repository's common git dir.
 * Hooks or config planted there would otherwise run later on the host, outside the sandbox.
 */
export function gitReadOnlyPaths(workspace: string): string[] {
  const dotGit = join(workspace, '.git');
  let st;
  try {
    st = lstatSync(dotGit);
  } catch {
    return [];
  }
  if (st.isDirectory()) return [dotGit];
  if (st.isSymbolicLink()) {
    try {
      const target = realpathSync(dotGit);
      return acceptableGitDir(target, workspace) ? [target] : [];
    } catch {
      return [];
    }
  }
  const paths = [dotGit];
  const pointer = readPointer(dotGit, 'gitdir:');
  if (!pointer) return paths;
  let gitDir: string;
  try {
    gitDir = realpathSync(resolve(workspace, pointer));
  } catch {
    return paths;
  }
  if (!acceptableGitDir(gitDir, workspace)) return paths;
  const common = readPointer(join(gitDir, 'commondir'), '');
  if (common) {
    try {
      const commonDir = realpathSync(resolve(gitDir, common));
      if (acceptableGitDir(commonDir, workspace)) paths.push(commonDir);
    } catch {
      /* dangling commondir: git will fail inside, nothing to protect */
    }
  }
  if (!paths.some((p) => p !== dotGit && isUnder(gitDir, p))) paths.push(gitDir);
  return paths;
}

/** Node installed under a masked directory (nvm in /root, a user's ~/.local) must stay visible. */
function nodePrefixToExpose(): string | undefined {
  let exe: string;
  try {
    exe = realpathSync(process.execPath);
  } catch {
    return undefined;
  }
  const prefix = dirname(dirname(exe));
  const masked = [...MASKED_DIRS, '/tmp'].some((m) => isUnder(prefix, m));
  return masked && prefix !== '/' ? prefix : undefined;
}

/** Host files readable by uid 0 that a command has no business reading. */
function secretFilesToHide(): string[] {
  const files = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-'];
  try {
    for (const f of readdirSync('/etc/ssh')) if (/^ssh_host_.*_key$/.test(f)) files.push(`/etc/ssh/${f}`);
  } catch {
    /* no sshd */
  }
  return files.filter((f) => existsSync(f));
}

/** With the network shared, DNS must still work though /run is masked (systemd-resolved's stub lives there). */
function resolverToExpose(): string | undefined {
  try {
    const target = realpathSync('/etc/resolv.conf');
    return MASKED_DIRS.some((m) => isUnder(target, m)) ? target : undefined;
  } catch {
    return undefined;
  }
}

export function bwrapArgs(input: BwrapArgsInput): string[] {
  const ws = input.workspace;
  const args: string[] = [
    '--die-with-parent',
    '--new-session',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    input.network ? '--share-net' : '--unshare-net',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--size',
    String(input.tmpfsBytes),
    '--tmpfs',
    '/tmp',
  ];
  for (const dir of MASKED_DIRS) if (isDir(dir)) args.push('--size', String(64 * 1024 * 1024), '--tmpfs', dir);
  for (const f of secretFilesToHide()) args.push('--ro-bind', '/dev/null', f);
  if (input.network) {
    const resolver = resolverToExpose();
    if (resolver) args.push('--ro-bind', resolver, resolver);
  }
  const nodePrefix = nodePrefixToExpose();
  if (nodePrefix) args.push('--ro-bind', nodePrefix, nodePrefix);
  args.push('--dir', input.home);
  args.push(...toolchainBinds(input.cacheDir));
  // The worktree comes after the masks: it may itself live under /tmp or /root.
  args.push('--bind', ws, ws);
  for (const p of input.readOnlyPaths ?? []) if (isAbsolute(p) && existsSync(p) && !isUnder(p, ws)) args.push('--ro-bind', p, p);
  for (const p of gitReadOnlyPaths(ws)) args.push('--ro-bind', p, p);
  args.push('--chdir', ws, '--clearenv');
  for (const [k, v] of Object.entries(input.env)) args.push('--setenv', k, v);
  if (input.statusFd !== undefined) args.push('--json-status-fd', String(input.statusFd));
  args.push('--', input.shell, '-c', input.command);
  return args;
}
