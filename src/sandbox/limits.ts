import { totalmem } from 'node:os';

/**
 * Resource limits for one command. Measured on this kind of host (Linux 6.x, Node 20.20, as root):
 *
 * - Processes: RLIMIT_NPROC does not bind uid 0 in the initial user namespace (the kernel exempts
 *   INIT_USER in fork), so under root a `ulimit -u` is no defence against a fork bomb. What does
 *   work is a pids cgroup (`pids.max`), used when the host lets us create one; RLIMIT_NPROC stays as
 *   the fallback, which does bind a non-root worker. 1024 tasks leave room for test runners that
 *   start a worker thread per core (threads count as tasks).
 * - Memory: RLIMIT_AS is a poor memory limit for Node toolchains. `node -e 1` runs in 1 GiB of
 *   address space, but every WebAssembly.Memory reserves ~10 GiB of guard region: with 16 GiB only
 *   one can be created, with 32 GiB three, with 64 GiB six. So memory is limited by a memory cgroup
 *   when available (resident memory, which also counts the private tmpfs), and RLIMIT_AS is only a
 *   64 GiB backstop against runaway allocation.
 * - File size caps a single runaway file; the private tmpfs mounts have their own size.
 */
export interface SandboxLimits {
  maxProcesses: number;
  memoryBytes: number;
  addressSpaceBytes: number;
  fileSizeBytes: number;
  openFiles: number;
  tmpfsBytes: number;
}

const GiB = 1024 * 1024 * 1024;

export function defaultLimits(): SandboxLimits {
  return {
    maxProcesses: 1024,
    memoryBytes: Math.min(8 * GiB, Math.floor(totalmem() / 2)),
    addressSpaceBytes: 64 * GiB,
    fileSizeBytes: 4 * GiB,
    openFiles: 4096,
    tmpfsBytes: 2 * GiB,
  };
}

/** prlimit(1) arguments; limits set on the launcher are inherited by bwrap and the command. */
export function prlimitArgs(limits: SandboxLimits, withNproc: boolean): string[] {
  const args = [
    `--as=${limits.addressSpaceBytes}`,
    `--fsize=${limits.fileSizeBytes}`,
    `--nofile=${limits.openFiles}`,
    '--core=0',
  ];
  if (withNproc) args.push(`--nproc=${limits.maxProcesses}`);
  return args;
}
