import { existsSync, lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { sanitizedGitConfig } from './git-config-mask.js';
import type { SensitiveEntries } from './sensitive-files.js';
import { SYSTEM_DIRS, type PrivateEntries, type SystemMount } from './system-mounts.js';
import { toolchainBinds } from './toolchains.js';

/** Directories that hold the user's secrets or host services: never exposed, not even as a git dir. */
const MASKED_DIRS = ['/home', '/root', '/run'] as const;

/**
 * - none: a network namespace with only loopback (every command but setup)
 * - slirp: own namespace, connected outside by slirp4netns once bwrap reports the child's pid
 * - host: the host's network, only when the operator allowed it for setup
 */
export type NetworkMode = 'none' | 'slirp' | 'host';

export interface BwrapArgsInput {
  workspace: string;
  network: NetworkMode;
  env: Record<string, string>;
  home: string;
  shell: string;
  command: string;
  tmpfsBytes: number;
  shmBytes: number;
  /** the allowlisted system directories (systemMounts()) */
  system: SystemMount[];
  /** host files and directories in them that others may not read (privateEntries()) */
  hidden: Pick<PrivateEntries, 'files' | 'dirs'>;
  /** credentials in the worktree (sensitiveEntries()) */
  sensitive: SensitiveEntries;
  /** an empty read-only host file bound over each masked file */
  emptyFile: string;
  /** outside paths bound read-only after the masks (absolute, existing): what `.kiln/config` links in */
  readOnlyPaths?: string[];
  /** paths inside the worktree (absolute) bound read-only over its writable bind: the protected set */
  protectedPaths?: string[];
  /** the repository as commands may read it (activities/git-view.ts), in place of the real git directory */
  gitView?: { dir: string; gitFile: string } | 'none';
  /** toolchains outside the system directories (absolute, existing), bound read-only */
  extraReadOnly?: string[];
  /** run in a user namespace; with `uid`, as that unprivileged user inside */
  userns?: { uid?: number; gid?: number };
  /** fd of a compiled seccomp program (seccomp.ts) */
  seccompFd?: number;
  /**
   * with network 'slirp': bwrap writes the child's pid on infoFd; the command's shell, once the
   * sandbox is fully set up, says so on readyFd and waits for a byte on goFd before running the
   * command (see waitForNetwork)
   */
  infoFd?: number;
  readyFd?: number;
  goFd?: number;
  /** with network 'slirp': the resolv.conf that names slirp's resolver */
  resolvConf?: string;
  /** a host folder of warm caches, bound read-write at SANDBOX_CACHE (see toolchains.ts) */
  cacheDir?: string;
  /** the worktree bound read-only: nothing in it can be written (policy/read-only.ts) */
  workspaceReadOnly?: boolean;
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

function isRealPath(p: string): boolean {
  try {
    return realpathSync(p) === resolve(p);
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

/** The view bound read-only, and the worktree's `.git` (a pointer file or a folder) made to lead to it. */
function gitViewArgs(ws: string, view: { dir: string; gitFile: string }): string[] {
  const dotGit = join(ws, '.git');
  let st;
  try {
    st = lstatSync(dotGit);
  } catch {
    return ['--ro-bind', view.dir, view.dir];
  }
  if (st.isDirectory()) return ['--ro-bind', view.dir, view.dir, '--ro-bind', view.dir, dotGit];
  if (st.isFile()) return ['--ro-bind', view.dir, view.dir, '--ro-bind', view.gitFile, dotGit];
  return ['--ro-bind', view.dir, view.dir];
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

/** Node installed outside the system directories (nvm in /root, a user's ~/.local) must stay visible. */
function nodePrefixToExpose(): string | undefined {
  let exe: string;
  try {
    exe = realpathSync(process.execPath);
  } catch {
    return undefined;
  }
  const prefix = dirname(dirname(exe));
  if (prefix === '/' || SYSTEM_DIRS.some((d) => isUnder(prefix, d))) return undefined;
  return prefix;
}

/** With the host network, DNS must still work though /run is not mounted (systemd-resolved's stub lives there). */
function resolverToExpose(): string | undefined {
  try {
    const target = realpathSync('/etc/resolv.conf');
    return SYSTEM_DIRS.some((d) => isUnder(target, d)) ? undefined : target;
  } catch {
    return undefined;
  }
}

/** The device nodes a command needs, bound one by one: see devArgs. */
const DEV_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'] as const;

/**
 * `--dev` mounts a devpts, which makes bwrap enter a second, nested user namespace to switch to the
 * final uid; slirp4netns could then not join the namespace that owns the network. Setup gets a
 * /dev without ptys instead; commands get bwrap's full /dev (test runners open ptys).
 */
function devArgs(input: BwrapArgsInput): string[] {
  const args: string[] = [];
  if (input.network === 'slirp') {
    args.push('--dir', '/dev');
    for (const n of DEV_NODES) if (existsSync(`/dev/${n}`)) args.push('--dev-bind', `/dev/${n}`, `/dev/${n}`);
    args.push('--symlink', '/proc/self/fd', '/dev/fd');
    args.push('--symlink', '/proc/self/fd/0', '/dev/stdin', '--symlink', '/proc/self/fd/1', '/dev/stdout', '--symlink', '/proc/self/fd/2', '/dev/stderr');
  } else {
    args.push('--dev', '/dev');
  }
  args.push('--size', String(input.shmBytes), '--tmpfs', '/dev/shm');
  return args;
}

function userArgs(input: BwrapArgsInput): string[] {
  if (!input.userns) return [];
  const args = ['--unshare-user'];
  // the final uid must be the namespace's own for slirp4netns to join it (see devArgs)
  if (input.network !== 'slirp') {
    if (input.userns.uid !== undefined) args.push('--uid', String(input.userns.uid));
    if (input.userns.gid !== undefined) args.push('--gid', String(input.userns.gid));
  }
  return args;
}

/**
 * bwrap's --block-fd holds the child before bwrap sets up its loopback, and slirp4netns brings
 * `lo` up itself: bwrap then failed with "loopback: Failed RTM_NEWADDR" on every run (measured,
 * bwrap 0.8 + slirp4netns 1.2). So the wait happens in the sandbox's shell, after bwrap is done and
 * before the command: it reports ready, waits for the network, closes both fds, runs the command.
 */
function waitForNetwork(readyFd: number, goFd: number): string {
  return `echo ready >&${readyFd}; exec ${readyFd}>&-; IFS= read -r _ <&${goFd} || exit 125; exec ${goFd}<&-; exec "$0" -c "$1"`;
}

export function bwrapArgs(input: BwrapArgsInput): string[] {
  const ws = input.workspace;
  const args: string[] = [
    '--die-with-parent',
    '--new-session',
    ...userArgs(input),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    input.network === 'host' ? '--share-net' : '--unshare-net',
    '--cap-drop',
    'ALL',
  ];
  // The root is bwrap's empty tmpfs: only what is bound below exists inside.
  for (const m of input.system) {
    if (m.kind === 'symlink') args.push('--symlink', m.target!, m.path);
    else args.push('--ro-bind', m.path, m.path);
  }
  // a private host file removed since the scan needs no mask, and bwrap could not make its mount
  // point on the read-only /etc: without this check the command fails to start
  for (const f of input.hidden.files) if (existsSync(f)) args.push('--ro-bind', input.emptyFile, f);
  for (const d of input.hidden.dirs) if (existsSync(d)) args.push('--tmpfs', d, '--remount-ro', d);
  if (input.network === 'slirp' && input.resolvConf) args.push('--ro-bind', input.resolvConf, '/etc/resolv.conf');
  if (input.network === 'host') {
    const resolver = resolverToExpose();
    if (resolver) args.push('--ro-bind', resolver, resolver);
  }
  args.push(...devArgs(input), '--proc', '/proc', '--size', String(input.tmpfsBytes), '--tmpfs', '/tmp');
  // /var is not bound; tools that put scratch files in /var/tmp get the private /tmp — unless the
  // worktree (or a path bound beside it) lives under /var/tmp: a link there would leave no room
  // for the bind, so /var/tmp is then a tmpfs that only holds it (read-only once bound, below)
  const inVarTmp = [ws, ...(input.readOnlyPaths ?? [])].some((p) => isAbsolute(p) && isUnder(p, '/var/tmp'));
  args.push(...(inVarTmp ? ['--tmpfs', '/var/tmp'] : ['--symlink', '/tmp', '/var/tmp']));
  const nodePrefix = nodePrefixToExpose();
  if (nodePrefix) args.push('--ro-bind', nodePrefix, nodePrefix);
  for (const p of input.extraReadOnly ?? []) if (isAbsolute(p) && existsSync(p) && p !== '/') args.push('--ro-bind', p, p);
  args.push('--dir', input.home);
  args.push(...toolchainBinds(input.cacheDir));
  // The worktree comes after the system binds: it may itself live under /tmp or /opt.
  args.push(input.workspaceReadOnly ? '--ro-bind' : '--bind', ws, ws);
  // bound only as what they are: a linked path that is (or sits under) a symlink would bind its
  // target, wherever on the host that points (prepare stores real paths; this catches a late swap)
  for (const p of input.readOnlyPaths ?? []) if (isAbsolute(p) && isRealPath(p) && !isUnder(p, ws)) args.push('--ro-bind', p, p);
  // a symlink is bound as nothing: its target could be anywhere, and the link itself cannot be rebound
  if (!input.workspaceReadOnly)
    for (const p of input.protectedPaths ?? []) if (isAbsolute(p) && p !== ws && isUnder(p, ws) && isRealPath(p)) args.push('--ro-bind', p, p);
  if (input.gitView === 'none') {
    // nothing of git's is bound: git fails inside rather than read the real repository
  } else if (input.gitView && isDir(input.gitView.dir)) args.push(...gitViewArgs(ws, input.gitView));
  else
    for (const p of gitReadOnlyPaths(ws)) {
      args.push('--ro-bind', p, p);
      const clean = isDir(p) ? sanitizedGitConfig(join(p, 'config')) : undefined;
      if (clean) args.push('--ro-bind', clean, join(p, 'config'));
    }
  for (const f of input.sensitive.files) args.push('--ro-bind', input.emptyFile, f);
  for (const d of input.sensitive.dirs) args.push('--tmpfs', d, '--remount-ro', d);
  // Nothing may be created on the root tmpfs itself: writes go to the worktree, /tmp or HOME
  // (and a /var/tmp made only to hold the worktree is no scratch space either).
  if (inVarTmp) args.push('--remount-ro', '/var/tmp');
  args.push('--remount-ro', '/');
  if (input.seccompFd !== undefined) args.push('--seccomp', String(input.seccompFd));
  if (input.infoFd !== undefined) args.push('--info-fd', String(input.infoFd));

  args.push('--chdir', ws, '--clearenv');
  for (const [k, v] of Object.entries(input.env)) args.push('--setenv', k, v);
  if (input.statusFd !== undefined) args.push('--json-status-fd', String(input.statusFd));
  if (input.readyFd !== undefined && input.goFd !== undefined)
    args.push('--', input.shell, '-c', waitForNetwork(input.readyFd, input.goFd), input.shell, input.command);
  else args.push('--', input.shell, '-c', input.command);
  return args;
}
