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
 *   when available (resident memory, which also counts the private tmpfs), and RLIMIT_AS is then
 *   only a 64 GiB backstop against runaway allocation. Without a memory cgroup RLIMIT_AS is the
 *   only limit, so it is the memory budget plus room for one WebAssembly reservation (12 GiB),
 *   never more than the 64 GiB backstop: 20 GiB on a 23 GiB host, not 64.
 * - File size caps a single runaway file; the private tmpfs mounts have their own size.
 */
export interface SandboxLimits {
  maxProcesses: number;
  memoryBytes: number;
  /** RLIMIT_AS when a memory cgroup limits the command */
  addressSpaceBytes: number;
  /** RLIMIT_AS when no memory cgroup could be made: the only memory limit then */
  addressSpaceNoCgroupBytes: number;
  fileSizeBytes: number;
  openFiles: number;
  /** size of the private /tmp (HOME lives there) */
  tmpfsBytes: number;
  /** size of the private /dev/shm */
  shmBytes: number;
}

const GiB = 1024 * 1024 * 1024;

export function defaultLimits(): SandboxLimits {
  const memoryBytes = Math.min(8 * GiB, Math.floor(totalmem() / 2));
  return {
    maxProcesses: 1024,
    memoryBytes,
    addressSpaceBytes: 64 * GiB,
    addressSpaceNoCgroupBytes: Math.min(64 * GiB, memoryBytes + 12 * GiB),
    fileSizeBytes: 4 * GiB,
    openFiles: 4096,
    tmpfsBytes: 2 * GiB,
    shmBytes: 512 * 1024 * 1024,
  };
}

/** prlimit(1) arguments; limits set on the launcher are inherited by bwrap and the command. */
export function prlimitArgs(limits: SandboxLimits, withNproc: boolean, memoryCgroup: boolean): string[] {
  const args = [`--as=${addressSpaceLimit(limits, memoryCgroup)}`, `--fsize=${limits.fileSizeBytes}`, `--nofile=${limits.openFiles}`, '--core=0'];
  if (withNproc) args.push(`--nproc=${limits.maxProcesses}`);
  return args;
}

export function addressSpaceLimit(limits: SandboxLimits, memoryCgroup: boolean): number {
  return memoryCgroup ? limits.addressSpaceBytes : limits.addressSpaceNoCgroupBytes;
}
