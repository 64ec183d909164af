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
 *   64 GiB backstop against runaway allocation. Without a memory cgroup, RLIMIT_DATA is set to the
 *   memory budget: it counts writable private mappings (heaps, anonymous mmap) and not the
 *   PROT_NONE reservations WebAssembly makes, so 2 GiB of it still allowed four
 *   WebAssembly.Memory objects and Node's fetch, while a Buffer, a V8 heap or a Python bytearray
 *   past it failed (measured with prlimit --data, Node 20.20, Python 3.11). An AS cap near the
 *   budget would break every WebAssembly user; the former budget + 12 GiB was 20 GiB here.
 * - File size caps a single runaway file; the private tmpfs mounts have their own size.
 */
export interface SandboxLimits {
  maxProcesses: number;
  memoryBytes: number;
  /** RLIMIT_AS: a backstop only (see above) */
  addressSpaceBytes: number;
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
    fileSizeBytes: 4 * GiB,
    openFiles: 4096,
    tmpfsBytes: 2 * GiB,
    shmBytes: 512 * 1024 * 1024,
  };
}

/**
 * The rlimits as `ulimit` arguments for the command launcher's shell (run-process.ts), which sets
 * them on itself before it execs bwrap (or the shell), so bwrap and the command inherit them: an
 * exec fewer than prlimit(1), ~0.9 ms a command here. Units as POSIX shells (dash, bash as sh,
 * busybox) take them: -v and -d in KiB, -f in 512-byte blocks. Setting one only without -H or -S
 * sets both the soft and the hard limit, as prlimit did.
 */
export function shellLimits(limits: SandboxLimits, memoryCgroup: boolean): string[] {
  const args = [
    '-v',
    String(Math.floor(limits.addressSpaceBytes / 1024)),
    '-f',
    String(Math.floor(limits.fileSizeBytes / 512)),
    '-n',
    String(limits.openFiles),
    '-c',
    '0',
  ];
  const data = dataLimit(limits, memoryCgroup);
  if (data !== undefined) args.push('-d', String(Math.floor(data / 1024)));
  return args;
}

/**
 * prlimit(1) arguments for RLIMIT_NPROC, the one limit whose `ulimit` letter differs between
 * shells (-u in bash, -p in dash); needed only without a pids cgroup.
 */
export function nprocArgs(limits: SandboxLimits): string[] {
  return [`--nproc=${limits.maxProcesses}`];
}

/** RLIMIT_DATA: the memory budget when no memory cgroup holds the command, else none (the cgroup does). */
export function dataLimit(limits: SandboxLimits, memoryCgroup: boolean): number | undefined {
  return memoryCgroup ? undefined : limits.memoryBytes;
}
