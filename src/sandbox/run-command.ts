import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bwrapArgs } from './bwrap-args.js';
import { createRunCgroup, type CgroupDeps } from './cgroup.js';
import { commandEnv, SANDBOX_HOME } from './env.js';
import { SANDBOX_CACHE } from './toolchains.js';
import { SandboxSpawnError } from './errors.js';
import { prlimitArgs, type SandboxLimits } from './limits.js';
import { launchAndWait } from './run-process.js';
import { findShell, findSystemBinary } from './system-paths.js';
import type { CommandOptions, CommandResult } from './types.js';

export interface RunnerConfig {
  mode: 'bwrap' | 'off';
  bwrapPath?: string;
  limits: SandboxLimits;
  cgroupDeps?: CgroupDeps;
}

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
        : `processes: RLIMIT_NPROC=${config.limits.maxProcesses} (no writable pids cgroup)`,
    );
  }
  if (!cgroup?.limits.some((l) => l.startsWith('memory'))) out.push('memory: only the RLIMIT_AS backstop (no writable memory cgroup)');
  out.push(
    findSystemBinary('prlimit')
      ? `rlimits: address space ${config.limits.addressSpaceBytes}, file size ${config.limits.fileSizeBytes}, open files ${config.limits.openFiles}, no core dumps`
      : 'rlimits: NOT set (prlimit not found)',
  );
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

/** Wrappers every command gets, sandboxed or not: it dies with the worker, and carries rlimits. */
function wrappers(limits: SandboxLimits, withNproc: boolean): string[] {
  const out: string[] = [];
  const setpriv = findSystemBinary('setpriv');
  // A worker killed with SIGKILL cannot clean up; PDEATHSIG makes the kernel take its commands along.
  if (setpriv) out.push(setpriv, '--pdeathsig', 'SIGKILL', '--');
  const prlimit = findSystemBinary('prlimit');
  if (prlimit) out.push(prlimit, ...prlimitArgs(limits, withNproc), '--');
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
  const workspace = resolveWorkspace(opts.workspace);
  const cgroup = createRunCgroup(config.limits, config.cgroupDeps);
  const hasPidsCgroup = cgroup?.limits.some((l) => l.startsWith('pids')) ?? false;
  const shell = findShell();
  const runOpts = {
    timeoutMs: opts.timeoutMs,
    ...(opts.maxOutputBytes !== undefined ? { maxOutputBytes: opts.maxOutputBytes } : {}),
    ...(opts.onOutput ? { onOutput: opts.onOutput } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };

  if (config.mode === 'bwrap') {
    if (!config.bwrapPath) throw new SandboxSpawnError('no bwrap path configured');
    const env = commandEnv(opts.env, SANDBOX_HOME, process.env, opts.cacheDir ? SANDBOX_CACHE : undefined);
    const argv = [
      ...wrappers(config.limits, !hasPidsCgroup),
      config.bwrapPath,
      ...bwrapArgs({
        workspace,
        network: opts.network === true,
        env,
        home: SANDBOX_HOME,
        shell,
        command,
        tmpfsBytes: config.limits.tmpfsBytes,
        statusFd: 3,
        ...(opts.cacheDir ? { cacheDir: opts.cacheDir } : {}),
        ...(opts.readOnlyPaths ? { readOnlyPaths: opts.readOnlyPaths } : {}),
      }),
    ];
    const result = await launchAndWait(
      { argv, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, cwd: workspace, bwrapStatus: true, ...(cgroup ? { cgroup } : {}) },
      runOpts,
    );
    return { ...result, sandboxed: true };
  }

  // Unsandboxed: a throwaway HOME still keeps tools from reading or writing the user's dotfiles.
  const home = mkdtempSync(join(tmpdir(), 'kiln-home-'));
  try {
    const env = commandEnv(opts.env, home, process.env, opts.cacheDir);
    const argv = [...wrappers(config.limits, !hasPidsCgroup), ...ownPidNamespace(), shell, '-c', command];
    const result = await launchAndWait(
      { argv, env, cwd: workspace, bwrapStatus: false, ...(cgroup ? { cgroup } : {}) },
      runOpts,
    );
    return { ...result, sandboxed: false };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
