import { realpathSync, rmSync, statSync } from 'node:fs';
import { bwrapArgs, type NetworkMode } from './bwrap-args.js';
import { createRunCgroup, type CgroupDeps, type RunCgroup } from './cgroup.js';
import { commandEnv, SANDBOX_HOME } from './env.js';
import { SandboxNetworkError, SandboxSpawnError, SandboxUnavailableError } from './errors.js';
import { dataLimit, nprocArgs, shellLimits, type SandboxLimits } from './limits.js';
import { GO_FD, INFO_FD, launchAndWait, READY_FD, SECCOMP_FD, STATUS_FD, type LaunchSpec } from './run-process.js';
import { hasKeptSandbox, KEPT_HELPER, keepable, KeptSandbox, keptSandbox } from './kept-sandbox.js';
import { mountMarks } from './mount-marks.js';
import { emptyFile } from './scratch-files.js';
import { keyringFilterFile } from './seccomp.js';
import { tracerArgv } from './tracer.js';
import { sensitiveEntries, withoutSensitive } from './sensitive-files.js';
import { attachSlirp, slirpResolvConf } from './setup-network.js';
import { privateEntries, systemMounts } from './system-mounts.js';
import { SANDBOX_CACHE } from './toolchains.js';
import { dieWithParent, findShell, findSystemBinary } from '../process/system-paths.js';
import { ownedTempDir } from '../process/owned-dirs.js';
import type { CommandOptions, CommandResult } from './types.js';
import { settings } from '../settings.js';

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
  /** toolchains outside the system directories, bound read-only (the toolchain discovery adds to this) */
  extraReadOnly?: string[];
}

type CgroupKinds = { pids: boolean; memory: boolean };

function cgroupKinds(cgroup: RunCgroup | undefined): CgroupKinds {
  return { pids: cgroup?.limits.some((l) => l.startsWith('pids')) ?? false, memory: cgroup?.limits.some((l) => l.startsWith('memory')) ?? false };
}

/** Readers share a kept sandbox per worktree unless the operator turned that off (KILN_KEEP_READER_SANDBOX=0). */
function keepReaders(): boolean {
  return settings().keepReaderSandbox;
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
      // from the /etc scan was removed before bwrap made its mount point or bound over it (a fresh
      // scan skips it).
      const vanished = err instanceof SandboxSpawnError && /Can't create file at |Can't bind mount .*No such file or directory/.test(err.message);
      if (!(err instanceof SandboxNetworkError || vanished) || opts.signal?.aborted || attempt >= 3) throw err;
    }
  }
}

async function runOnce(config: RunnerConfig, command: string, opts: CommandOptions): Promise<CommandResult> {
  const workspace = resolveWorkspace(opts.workspace);
  // decided before anything is created: a refusal leaves nothing behind
  const network = config.mode === 'bwrap' ? networkMode(config, opts.network === true) : 'host';
  const shell = findShell();
  const tracer = opts.traceFile ? tracerArgv(opts.traceFile) : undefined;
  const runOpts = {
    timeoutMs: opts.timeoutMs,
    ...(opts.maxOutputBytes !== undefined ? { maxOutputBytes: opts.maxOutputBytes } : {}),
    ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };

  if (config.mode === 'bwrap') {
    const plan = await bwrapPlan(config, opts, workspace, network, shell);
    // a reader runs in the worktree's kept sandbox (kept-sandbox.ts) when it may
    if (!tracer && opts.workspaceReadOnly && network === 'none' && keepReaders() && keepable(command, shell)) {
      const kept = await readerSandbox(config, plan, workspace);
      if (kept) return { ...(await kept.run(command, runOpts)), sandboxed: true, workspaceReadOnly: true };
    }

    const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
    const cgroups = cgroupKinds(cgroup);
    const result = await launchAndWait(
      {
        ...plan.specFor(traced(plan.argvFor(cgroups, command), plan.bwrapAt, tracer), cgroup, cgroups),
        ...(network === 'slirp' && plan.slirp ? { attachNetwork: (pid: number) => attachSlirp(plan.slirp!, pid) } : {}),
      },
      runOpts,
    );
    return { ...result, sandboxed: true, ...(tracer ? { traced: true } : {}), ...(opts.workspaceReadOnly ? { workspaceReadOnly: true } : {}) };
  }

  const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
  const cgroups = cgroupKinds(cgroup);
  const rlimits = shellLimits(config.limits, cgroups.memory);
  // Unsandboxed: a throwaway HOME still keeps tools from reading or writing the user's dotfiles.
  const home = ownedTempDir('kiln-home-');
  try {
    const env = commandEnv(opts.env, home, process.env, opts.cacheDir);
    const argv = [...wrappers(config.limits, !cgroups.pids, false), ...ownPidNamespace(), ...(tracer ?? []), shell, '-c', command];
    const result = await launchAndWait({ argv, env, cwd: workspace, bwrapStatus: false, rlimits, ...(cgroup ? { cgroup } : {}) }, runOpts);
    return { ...result, sandboxed: false, ...(tracer ? { traced: true } : {}) };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

interface BwrapPlan {
  /** the launcher's argv for a sandbox that runs `sandboxCommand`, held by cgroups of these kinds */
  argvFor(cgroups: CgroupKinds, sandboxCommand: string): string[];
  /** bwrap's own path, where a tracer goes in front of it */
  bwrapAt: string;
  specFor(argv: string[], cgroup: RunCgroup | undefined, cgroups: CgroupKinds): LaunchSpec;
  slirp?: string;
}

/** Everything a sandbox for these options is made of, from a credential scan and host scan done now. */
async function bwrapPlan(config: RunnerConfig, opts: CommandOptions, workspace: string, network: NetworkMode, shell: string): Promise<BwrapPlan> {
  const bwrapPath = config.bwrapPath;
  if (!bwrapPath) throw new SandboxSpawnError('no bwrap path configured');
  const sensitive = sensitiveEntries(workspace, opts.sensitive);
  const hidden = await privateEntries();
  const env = commandEnv(opts.env, SANDBOX_HOME, process.env, opts.cacheDir ? SANDBOX_CACHE : undefined);
  const seccompFile = config.keyringFilter ? (keyringFilterFile() ?? undefined) : undefined;
  const slirp = config.setupNetwork?.kind === 'slirp' ? config.setupNetwork.slirpPath : undefined;
  return {
    ...(slirp ? { slirp } : {}),
    bwrapAt: bwrapPath,
    argvFor: (cgroups, sandboxCommand) => [
      ...wrappers(config.limits, !cgroups.pids, true),
      bwrapPath,
      ...bwrapArgs({
        workspace,
        network,
        env,
        home: SANDBOX_HOME,
        shell,
        command: sandboxCommand,
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
        ...(opts.protectedPaths ? { protectedPaths: opts.protectedPaths } : {}),
        ...(opts.gitView ? { gitView: opts.gitView } : {}),
        ...(config.extraReadOnly ? { extraReadOnly: config.extraReadOnly } : {}),
      }),
    ],
    specFor: (argv, cgroup, cgroups) => ({
      argv,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      cwd: workspace,
      bwrapStatus: true,
      rlimits: shellLimits(config.limits, cgroups.memory),
      ...(cgroup ? { cgroup } : {}),
      ...(seccompFile !== undefined ? { seccompFile } : {}),
    }),
  };
}

/** The argv with the tracer in front of bwrap: it follows the sandbox from outside, with the wrappers' limits. */
function traced(argv: string[], bwrapPath: string, tracer: string[] | undefined): string[] {
  if (!tracer) return argv;
  const at = argv.indexOf(bwrapPath);
  return [...argv.slice(0, at), ...tracer, ...argv.slice(at)];
}

/** The worktree's kept sandbox for readers as `plan` describes it (kept or new), or none while it is busy. */
function readerSandbox(config: RunnerConfig, plan: BwrapPlan, workspace: string): Promise<KeptSandbox | undefined> {
  const describe = (cgroups: CgroupKinds) => {
    const argv = plan.argvFor(cgroups, KEPT_HELPER);
    return { argv, key: JSON.stringify(plan.specFor(argv, undefined, cgroups)), marks: mountMarks(argv) };
  };
  return keptSandbox(workspace, describe, (onGone) => {
    const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
    const cgroups = cgroupKinds(cgroup);
    const { argv, key, marks } = describe(cgroups);
    return new KeptSandbox(key, marks, cgroups, plan.specFor(argv, cgroup, cgroups), onGone);
  });
}

/**
 * Sets up the worktree's kept sandbox for readers with these options now, unless one is kept:
 * called while the model thinks, so that the run's first reader does not wait for it. Readers
 * still check it is theirs (readerSandbox), so options that differ only cost a set-up.
 */
export async function keepReaderSandboxReady(config: RunnerConfig, workspace: string, options: () => Promise<CommandOptions>): Promise<void> {
  if (config.mode !== 'bwrap' || !keepReaders()) return;
  const real = resolveWorkspace(workspace);
  const shell = findShell();
  if (hasKeptSandbox(real) || !keepable('', shell)) return;
  const opts = { ...(await options()), workspaceReadOnly: true };
  if (resolveWorkspace(opts.workspace) !== real || hasKeptSandbox(real)) return;
  await readerSandbox(config, await bwrapPlan(config, opts, real, 'none', shell), real);
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
