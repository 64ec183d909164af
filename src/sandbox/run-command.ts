import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bwrapArgs, type NetworkMode } from './bwrap-args.js';
import { createRunCgroup, type CgroupDeps } from './cgroup.js';
import { commandEnv, SANDBOX_HOME } from './env.js';
import { SandboxNetworkError, SandboxSpawnError, SandboxUnavailableError } from './errors.js';
import { dataLimit, nprocArgs, shellLimits, type SandboxLimits } from './limits.js';
import { GO_FD, INFO_FD, launchAndWait, READY_FD, SECCOMP_FD, STATUS_FD } from './run-process.js';
import { emptyFile } from './scratch-files.js';
import { keyringFilterFile } from './seccomp.js';
import { sensitiveEntries, withoutSensitive } from './sensitive-files.js';
import { attachSlirp, slirpResolvConf } from './setup-network.js';
import { privateEntries, systemMounts } from './system-mounts.js';
import { SANDBOX_CACHE } from './toolchains.js';
import { dieWithParent, findShell, findSystemBinary } from './system-paths.js';
import type { CommandOptions, CommandResult } from './types.js';

/** How commands that asked for the network (setup) get it. */
export type SetupNetwork =
  | { kind: 'slirp'; slirpPath: string }
  /** the operator allowed setup on the host's network (KILN_SETUP_HOST_NETWORK=allow) */
  | { kind: 'host' }
  | { kind: 'refuse'; reason: string };

export interface RunnerConfig {
  mode: 'bwrap' | 'off';
  bwrapPath?: string;
  limits: SandboxLimits;
  cgroupDeps?: CgroupDeps;
  /** run in a user namespace as an unprivileged uid (the probe found the host allows it) */
  userns?: boolean;
  /** deny the kernel keyring syscalls (seccomp.ts) */
  keyringFilter?: boolean;
  setupNetwork?: SetupNetwork;
  /** toolchains outside the system directories, bound read-only (issue 9's discovery adds to this) */
  extraReadOnly?: string[];
}

/** The uid/gid a command runs as inside its user namespace when the worker is root. */
export const SANDBOX_UID = 1000;

/** Which limits a run actually gets on this host, in words, for the probe and for `kiln doctor`-like reports. */
export function describeLimits(config: RunnerConfig): string[] {
  const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
  const out: string[] = [];
  if (cgroup) {
    out.push(...cgroup.limits);
    void cgroup.remove();
  }
  if (!cgroup?.limits.some((l) => l.startsWith('pids'))) {
    out.push(
      process.getuid?.() === 0 && config.mode === 'off'
        ? 'processes: NOT limited (no writable pids cgroup, and RLIMIT_NPROC does not bind root)'
        : findSystemBinary('prlimit')
          ? `processes: RLIMIT_NPROC=${config.limits.maxProcesses} (no writable pids cgroup)`
          : 'processes: NOT limited (no writable pids cgroup, and no prlimit to set RLIMIT_NPROC)',
    );
  }
  const memoryCgroup = cgroup?.limits.some((l) => l.startsWith('memory')) ?? false;
  const data = dataLimit(config.limits, memoryCgroup);
  if (!memoryCgroup) out.push(`memory: NOT limited by a cgroup (none writable); RLIMIT_DATA=${data} per process instead`);
  out.push(
    `rlimits: address space ${config.limits.addressSpaceBytes}${data !== undefined ? `, data ${data}` : ''}, file size ${config.limits.fileSizeBytes}, open files ${config.limits.openFiles}, no core dumps`,
  );
  if (config.mode === 'bwrap') out.push(`tmpfs: /tmp ${config.limits.tmpfsBytes} bytes, /dev/shm ${config.limits.shmBytes} bytes`);
  return out;
}

function resolveWorkspace(workspace: string): string {
  let real: string;
  try {
    real = realpathSync(workspace);
  } catch {
    throw new SandboxSpawnError(`workspace ${workspace} does not exist`);
  }
  if (!statSync(real).isDirectory()) throw new SandboxSpawnError(`workspace ${workspace} is not a directory`);
  return real;
}

/**
 * Wrappers every command gets, sandboxed or not: it dies with the worker, and without a pids
 * cgroup it carries RLIMIT_NPROC (the other rlimits the launcher sets: shellLimits). A worker
 * killed with SIGKILL cannot clean up; PDEATHSIG makes the kernel take its commands along. Under
 * bwrap its own --die-with-parent does that (for bwrap and everything inside), so setpriv is left
 * out there: one exec fewer per command, 4-10 ms measured here.
 */
function wrappers(limits: SandboxLimits, withNproc: boolean, bwrapDiesWithParent: boolean): string[] {
  const out: string[] = [];
  if (!bwrapDiesWithParent) out.push(...dieWithParent('SIGKILL'));
  const prlimit = withNproc ? findSystemBinary('prlimit') : undefined;
  if (prlimit) out.push(prlimit, ...nprocArgs(limits), '--');
  return out;
}

/**
 * Unsandboxed commands still get their own PID namespace when we are root: PDEATHSIG reaches only
 * the shell, and a child it started would outlive a killed worker; when the namespace's first
 * process dies, the kernel kills every other one in it. Without root there is no such net.
 */
function ownPidNamespace(): string[] {
  const unshare = findSystemBinary('unshare');
  return unshare && process.getuid?.() === 0 ? [unshare, '--pid', '--fork', '--kill-child', '--'] : [];
}

export async function runCommand(config: RunnerConfig, command: string, opts: CommandOptions): Promise<CommandResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runOnce(config, command, opts);
    } catch (err) {
      // The sandbox failed before the command ran, so starting again repeats nothing: slirp4netns
      // found the sandbox gone before it could attach (seen under load), or a host file masked
      // from the /etc scan was removed before bwrap made its mount point (a fresh scan skips it).
      const vanished = err instanceof SandboxSpawnError && /Can't create file at /.test(err.message);
      if (!(err instanceof SandboxNetworkError || vanished) || opts.signal?.aborted || attempt >= 3) throw err;
    }
  }
}

async function runOnce(config: RunnerConfig, command: string, opts: CommandOptions): Promise<CommandResult> {
  const workspace = resolveWorkspace(opts.workspace);
  // decided before anything is created: a refusal leaves nothing behind
  const network = config.mode === 'bwrap' ? networkMode(config, opts.network === true) : 'host';
  const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
  const hasPidsCgroup = cgroup?.limits.some((l) => l.startsWith('pids')) ?? false;
  const hasMemoryCgroup = cgroup?.limits.some((l) => l.startsWith('memory')) ?? false;
  // the launcher sets them, sandboxed or not
  const rlimits = shellLimits(config.limits, hasMemoryCgroup);
  const shell = findShell();
  const runOpts = {
    timeoutMs: opts.timeoutMs,
    ...(opts.maxOutputBytes !== undefined ? { maxOutputBytes: opts.maxOutputBytes } : {}),
    ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };

  if (config.mode === 'bwrap') {
    if (!config.bwrapPath) throw new SandboxSpawnError('no bwrap path configured');
    let sensitive;
    try {
      sensitive = sensitiveEntries(workspace, opts.sensitive);
    } catch (err) {
      await cgroup?.remove();
      throw err;
    }
    const hidden = await privateEntries();
    const env = commandEnv(opts.env, SANDBOX_HOME, process.env, opts.cacheDir ? SANDBOX_CACHE : undefined);
    const seccompFile = config.keyringFilter ? (keyringFilterFile() ?? undefined) : undefined;
    const slirp = config.setupNetwork?.kind === 'slirp' ? config.setupNetwork.slirpPath : undefined;
    const argv = [
      ...wrappers(config.limits, !hasPidsCgroup, true),
      config.bwrapPath,
      ...bwrapArgs({
        workspace,
        network,
        env,
        home: SANDBOX_HOME,
        shell,
        command,
        tmpfsBytes: config.limits.tmpfsBytes,
        shmBytes: config.limits.shmBytes,
        system: systemMounts(hidden.skipped),
        hidden,
        sensitive,
        emptyFile: emptyFile(),
        statusFd: STATUS_FD,
        ...(config.userns ? { userns: process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : {} } : {}),
        ...(seccompFile !== undefined ? { seccompFd: SECCOMP_FD } : {}),
        ...(network === 'slirp' ? { infoFd: INFO_FD, readyFd: READY_FD, goFd: GO_FD, resolvConf: slirpResolvConf() } : {}),
        ...(opts.cacheDir ? { cacheDir: opts.cacheDir } : {}),
        ...(opts.workspaceReadOnly ? { workspaceReadOnly: true } : {}),
        ...(opts.readOnlyPaths ? { readOnlyPaths: withoutSensitive(opts.readOnlyPaths, opts.sensitive) } : {}),
        ...(config.extraReadOnly ? { extraReadOnly: config.extraReadOnly } : {}),
      }),
    ];
    const result = await launchAndWait(
      {
        argv,
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
        cwd: workspace,
        bwrapStatus: true,
        rlimits,
        ...(cgroup ? { cgroup } : {}),
        ...(seccompFile !== undefined ? { seccompFile } : {}),
        ...(network === 'slirp' && slirp ? { attachNetwork: (pid: number) => attachSlirp(slirp, pid) } : {}),
      },
      runOpts,
    );
    return { ...result, sandboxed: true, ...(opts.workspaceReadOnly ? { workspaceReadOnly: true } : {}) };
  }

  // Unsandboxed: a throwaway HOME still keeps tools from reading or writing the user's dotfiles.
  const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
  try {
    const env = commandEnv(opts.env, home, process.env, opts.cacheDir);
    const argv = [...wrappers(config.limits, !hasPidsCgroup, false), ...ownPidNamespace(), shell, '-c', command];
    const result = await launchAndWait({ argv, env, cwd: workspace, bwrapStatus: false, rlimits, ...(cgroup ? { cgroup } : {}) }, runOpts);
    return { ...result, sandboxed: false };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * Setup asks for the network; it gets slirp4netns's, never the host's unless the operator said so.
 * With neither, it fails closed: nothing runs.
 */
function networkMode(config: RunnerConfig, wanted: boolean): NetworkMode {
  if (!wanted) return 'none';
  const net = config.setupNetwork ?? { kind: 'refuse', reason: 'no setup network was configured' };
  if (net.kind === 'slirp') return 'slirp';
  if (net.kind === 'host') return 'host';
  throw new SandboxUnavailableError(
    `setup commands need the network, and ${net.reason}; they were not run. Install slirp4netns (\`apt-get install slirp4netns\` or \`kiln setup\`), ` +
      "or, accepting that setup can then reach every service on this machine's loopback, start the worker with KILN_SETUP_HOST_NETWORK=allow.",
  );
}
