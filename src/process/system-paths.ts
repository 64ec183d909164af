import { accessSync, constants, statSync } from 'node:fs';

/**
 * Binaries the sandbox and the process launchers rely on are looked up in fixed system
 * directories only, never through PATH: a worktree or node_modules/.bin early on PATH could
 * otherwise plant a fake `bwrap` that "sandboxes" nothing.
 */
export const SYSTEM_BIN_DIRS = ['/usr/bin', '/usr/local/bin', '/bin', '/usr/sbin', '/sbin'] as const;

export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findSystemBinary(name: string, dirs: readonly string[] = SYSTEM_BIN_DIRS): string | undefined {
  for (const dir of dirs) {
    const candidate = `${dir}/${name}`;
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * `setpriv --pdeathsig SIG --`, to put before a program that must not outlive the process that
 * starts it however that process ends (SIGKILL included); nothing where setpriv is missing.
 */
export function dieWithParent(signal: 'SIGKILL' | 'SIGTERM'): string[] {
  const setpriv = findSystemBinary('setpriv');
  return setpriv ? [setpriv, '--pdeathsig', signal, '--'] : [];
}

/** bash when the system has it (agents and repo scripts assume bash), else POSIX sh. */
export function findShell(): string {
  return findSystemBinary('bash', ['/usr/bin', '/bin', '/usr/local/bin']) ?? '/bin/sh';
}
