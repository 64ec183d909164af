/*
 * How a long-lived program (an MCP server over stdio) is started in a sandbox of its own: the
 * same bubblewrap walls and cgroups as a command (no network, the host's private files masked, the root
 * read-only), with its own scratch folder as the only writable place and the run's worktree
 * either absent or bound read-only. The caller spawns the argv and talks over its stdin/stdout.
 */
import { realpathSync } from 'node:fs';
import { bwrapArgs } from './bwrap-args.js';
import { egressEnv, forwardedCommand } from './egress-forwarder.js';
import { commandEnv } from './env.js';
import { nprocArgs, type SandboxLimits } from './limits.js';
import type { RunnerConfig } from './run-command.js';
import { SANDBOX_UID } from './run-command.js';
import { createRunCgroup } from './cgroup.js';
import { JOIN_CGROUPS } from './run-process.js';
import { emptyFile } from './scratch-files.js';
import { sensitiveEntries, withoutSensitive, type SensitiveConfig } from './sensitive-files.js';
import { shellJoin } from './shell-quote.js';
import { privateEntries, systemMounts } from './system-mounts.js';
import { dieWithParent, findShell, findSystemBinary } from '../process/system-paths.js';

export interface ServerLaunchSpec {
  /** the program and its arguments */
  argv: readonly string[];
  /** a host folder the server owns: its cwd and HOME, the only place it may write */
  scratch: string;
  /** the run's worktree, bound read-only when given; absent: the server does not see it at all */
  worktree?: string;
  /** host paths it may read (its own program's files) */
  readOnlyPaths?: readonly string[];
  /** the run's sensitive-file policy: such files in the worktree are masked */
  sensitive?: SensitiveConfig;
  env?: Record<string, string>;
  /**
   * the worker's proxy for this server (egress-proxy.ts): bound in, with a forwarder on the
   * sandbox's loopback and the proxy variables set; absent, the server has no network at all
   */
  egressSocket?: string;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** false only when the sandbox is off: the server then runs with the worker's access */
  sandboxed: boolean;
  /** the limits its cgroup holds it to (memory, processes), when the host gives one */
  cgroupLimits?: string[];
  /** kills whatever the server left and removes its cgroup: called once it has stopped, whichever way */
  release(): Promise<void>;
}

/** Where the host gives no pids cgroup, the process count is still held, by RLIMIT_NPROC. */
function limited(limits: SandboxLimits): string[] {
  const prlimit = findSystemBinary('prlimit');
  return prlimit ? [prlimit, ...nprocArgs(limits), '--'] : [];
}

export async function serverLaunch(config: RunnerConfig, spec: ServerLaunchSpec): Promise<ServerLaunch> {
  const scratch = realpathSync(spec.scratch);
  const env = commandEnv(spec.env, scratch);
  // without the sandbox the server has the worker's network, and no forwarder to point it at
  if (config.mode !== 'bwrap') {
    const [command, ...args] = [...dieWithParent('SIGKILL'), ...spec.argv];
    return { command: command!, args, env, cwd: scratch, sandboxed: false, release: async () => {} };
  }
  if (!config.bwrapPath) throw new Error('no bwrap path configured');
  const hidden = await privateEntries();
  const worktree = spec.worktree ? realpathSync(spec.worktree) : undefined;
  const argv = [
    ...limited(config.limits),
    config.bwrapPath,
    ...bwrapArgs({
      workspace: scratch,
      network: 'none',
      env: spec.egressSocket ? { ...env, ...egressEnv() } : env,
      home: scratch,
      shell: findShell(),
      command: spec.egressSocket ? forwardedCommand(spec.argv, spec.egressSocket) : `exec ${shellJoin(spec.argv)}`,
      tmpfsBytes: config.limits.tmpfsBytes,
      shmBytes: config.limits.shmBytes,
      system: systemMounts(hidden.skipped),
      hidden,
      sensitive: worktree ? sensitiveEntries(worktree, spec.sensitive) : { files: [], dirs: [] },
      emptyFile: emptyFile(),
      gitView: 'none',
      readOnlyPaths: [
        ...withoutSensitive([...(worktree ? [worktree] : []), ...(spec.readOnlyPaths ?? [])], spec.sensitive),
        // the socket alone, at its own path (its folder is the worker's)
        ...(spec.egressSocket ? [spec.egressSocket] : []),
      ],
      ...(config.userns ? { userns: process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : {} } : {}),
      ...(config.extraReadOnly ? { extraReadOnly: config.extraReadOnly } : {}),
    }),
  ];
  // a cgroup of its own, as a command gets: resident memory and processes bound, and every process it leaves found
  const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
  const launched = cgroup
    ? ['/bin/sh', '-c', [...JOIN_CGROUPS, 'exec "$@"'].join('\n'), 'kiln-server', String(cgroup.joinFiles.length), ...cgroup.joinFiles, ...argv]
    : argv;
  const [command, ...args] = launched;
  return {
    command: command!,
    args,
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    cwd: scratch,
    sandboxed: true,
    ...(cgroup ? { cgroupLimits: cgroup.limits } : {}),
    release: async () => cgroup?.remove(),
  };
}
