/**
 * The tracer a verification runs a check under: strace on the host, around the sandbox, so the
 * log is written where nothing inside the sandbox can reach it and a check cannot edit what was
 * seen of it. Only the syscalls that name a file or a process's start are stopped at (strace's
 * seccomp-bpf mode), which keeps the cost to the file lookups themselves.
 */
import { spawnSync } from 'node:child_process';
import { dieWithParent, findSystemBinary } from '../process/system-paths.js';

let usable: string | null | undefined;

/**
 * strace, once it has shown it can trace here: a host that forbids ptrace (a container without
 * the capability, Yama's strictest mode) gets untraced checks and the verifier says so, rather
 * than checks that cannot start.
 */
function usableStrace(): string | undefined {
  if (usable === undefined) {
    const strace = findSystemBinary('strace');
    const ok =
      strace &&
      spawnSync(strace, ['-f', '--seccomp-bpf', '--pidns-translation', '-qq', '-o', '/dev/null', '--', '/bin/true'], { timeout: 10_000 }).status === 0;
    usable = ok ? strace : null;
  }
  return usable ?? undefined;
}

/** Syscalls that open, look up or execute a path, plus what a path is resolved against (cwd, forks). */
const TRACED = [
  'execve',
  'execveat',
  'open',
  'openat',
  'openat2',
  'creat',
  'stat',
  'lstat',
  'newfstatat',
  'statx',
  'access',
  'faccessat',
  'faccessat2',
  'readlink',
  'readlinkat',
  'chdir',
  'fchdir',
  'clone',
  'clone3',
  'fork',
  'vfork',
].join(',');

/**
 * The argv to put in front of the program to trace, or undefined when strace is not installed.
 * The tracer dies with the process that started it, and bwrap (its child) dies with it
 * (--die-with-parent), so a worker that is killed leaves no traced check running.
 */
export function tracerArgv(file: string): string[] | undefined {
  const strace = usableStrace();
  if (!strace) return undefined;
  return [
    ...dieWithParent('SIGKILL'),
    strace,
    '-f',
    '--seccomp-bpf',
    // the sandbox has its own PID namespace: a fork's return then names the child as strace knows it too
    '--pidns-translation',
    '-qq',
    '-s',
    '4096',
    '-e',
    `trace=${TRACED}`,
    '-e',
    'signal=none',
    '-o',
    file,
    '--',
  ];
}
