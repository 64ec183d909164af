import { isAbsolute } from 'node:path';
import type { CgroupDeps } from './cgroup.js';
import { SandboxSpawnError, SandboxUnavailableError } from './errors.js';
import { defaultLimits, type SandboxLimits } from './limits.js';
import { probeSandbox, type ProbeResult } from './probe.js';
import { keepReaderSandboxReady, runCommand, type RunnerConfig, type SetupNetwork } from './run-command.js';
import { findSlirp } from './setup-network.js';
import { findSystemBinary, isExecutableFile } from '../process/system-paths.js';
import { serverLaunch, type ServerLaunch, type ServerLaunchSpec } from './server-launch.js';
import type { CommandOptions, CommandResult, Sandbox } from './types.js';
import { settings } from '../settings.js';

export interface CreateSandboxOptions {
  mode: 'bwrap' | 'off';
  /** an absolute path; by default /usr/bin, /usr/local/bin and /bin are searched (never PATH) */
  bwrapPath?: string;
  limits?: Partial<SandboxLimits>;
  /** for tests: where cgroups live */
  cgroupDeps?: CgroupDeps;
  /**
   * the operator's choice: setup may use the host's network when slirp4netns cannot give it one
   * of its own. Default: the worker's KILN_SETUP_HOST_NETWORK=allow; otherwise such setup is refused.
   */
  allowSetupHostNetwork?: boolean;
  /** toolchains outside /usr, /opt and the like, bound read-only into every command */
  extraReadOnly?: string[];
  /** by default slirp4netns is looked up in the system directories; null: behave as if it were not installed */
  slirpPath?: string | null;
}

const BWRAP_DIRS = ['/usr/bin', '/usr/local/bin', '/bin'] as const;

const OFF_HINT = "`--sandbox off` exists but is unsafe: commands then run with the worker's full access to your files and network.";

// One probe per bwrap binary per process: it spawns several sandboxes, too slow to repeat per run.
const probes = new Map<string, Promise<ProbeResult>>();

function cachedProbe(bwrapPath: string, config: Partial<RunnerConfig>): Promise<ProbeResult> {
  const key = JSON.stringify([bwrapPath, config.setupNetwork, config.extraReadOnly, config.limits]);
  let p = probes.get(key);
  if (!p) {
    p = probeSandbox(bwrapPath, config);
    probes.set(key, p);
    // A probe that threw may succeed after the user fixes the host; do not cache the exception.
    p.catch(() => probes.delete(key));
  }
  return p;
}

function setupNetwork(allowHost: boolean, slirpPath: string | null | undefined): SetupNetwork {
  const slirp = slirpPath === undefined ? findSlirp() : slirpPath;
  if (slirp) return { kind: 'slirp', slirpPath: slirp };
  if (allowHost) return { kind: 'host' };
  return { kind: 'refuse', reason: 'slirp4netns, which gives setup a network of its own, is not installed' };
}

function locateBwrap(explicit: string | undefined): string {
  if (explicit !== undefined) {
    if (!isAbsolute(explicit)) {
      throw new SandboxUnavailableError(`bwrap path "${explicit}" is not absolute; give the full path of the system binary (e.g. /usr/bin/bwrap). ${OFF_HINT}`);
    }
    if (!isExecutableFile(explicit)) {
      throw new SandboxUnavailableError(
        `bubblewrap not found: ${explicit} does not exist or is not executable. Install it with \`apt-get install bubblewrap\` (Debian/Ubuntu) or \`dnf install bubblewrap\`. ${OFF_HINT}`,
      );
    }
    return explicit;
  }
  const found = findSystemBinary('bwrap', BWRAP_DIRS);
  if (!found) {
    throw new SandboxUnavailableError(
      `bubblewrap not found in ${BWRAP_DIRS.join(', ')}. Install it with \`apt-get install bubblewrap\` (Debian/Ubuntu) or \`dnf install bubblewrap\`. ${OFF_HINT}`,
    );
  }
  return found;
}

function explainFailure(bwrapPath: string, probe: ProbeResult): string {
  const failed = probe.checks.filter((c) => !c.ok);
  const startFailure = failed.find((c) => c.name === 'sandbox starts');
  if (startFailure) {
    return (
      `${bwrapPath} could not start a sandbox: ${startFailure.detail}. ` +
      'If user namespaces are disabled, enable them: `sysctl kernel.unprivileged_userns_clone=1` (Debian) ' +
      'or `sysctl user.max_user_namespaces=15000`; on Ubuntu 24.04+ also `sysctl kernel.apparmor_restrict_unprivileged_userns=0`. ' +
      `Inside a container, run it with user namespaces allowed (e.g. docker --security-opt seccomp=unconfined). ${OFF_HINT}`
    );
  }
  return (
    `the sandbox probe found a leak, so no command will run: ${failed.map((c) => `${c.name}: ${c.detail}`).join('; ')}. ` +
    `Check the bubblewrap version (\`${bwrapPath} --version\`, 0.4+ needed) and the mounts on this host. ${OFF_HINT}`
  );
}

class ConfiguredSandbox implements Sandbox {
  constructor(
    readonly kind: 'bwrap' | 'off',
    private readonly config: RunnerConfig,
    readonly probe?: ProbeResult,
  ) {}

  run(command: string, opts: CommandOptions): Promise<CommandResult> {
    return runCommand(this.config, command, opts);
  }

  serverLaunch(spec: ServerLaunchSpec): Promise<ServerLaunch> {
    return serverLaunch(this.config, spec);
  }

  keepReady(workspace: string, opts: () => Promise<CommandOptions>): void {
    // a failure here is the first reader's to meet and report
    keepReaderSandboxReady(this.config, workspace, opts).catch(() => undefined);
  }
}

/**
 * The only way to get a Sandbox. In 'bwrap' mode it refuses (SandboxUnavailableError) unless
 * bubblewrap exists at a system path and the start-up probe proves the isolation on this host:
 * Kiln fails closed rather than running an agent's commands unconfined.
 */
export async function createSandbox(opts: CreateSandboxOptions): Promise<Sandbox> {
  const limits = { ...defaultLimits(), ...(opts.limits ?? {}) };
  const cgroupDeps = opts.cgroupDeps ? { cgroupDeps: opts.cgroupDeps } : {};
  if (opts.mode === 'off') return new ConfiguredSandbox('off', { mode: 'off', limits, ...cgroupDeps });

  const bwrapPath = locateBwrap(opts.bwrapPath);
  const allowHost = opts.allowSetupHostNetwork ?? settings().setupHostNetwork;
  let probe: ProbeResult;
  try {
    probe = await cachedProbe(bwrapPath, {
      limits,
      ...cgroupDeps,
      setupNetwork: setupNetwork(allowHost, opts.slirpPath),
      ...(opts.extraReadOnly ? { extraReadOnly: opts.extraReadOnly } : {}),
    });
  } catch (err) {
    const detail = err instanceof SandboxSpawnError ? err.message : String(err);
    throw new SandboxUnavailableError(explainFailure(bwrapPath, { ok: false, checks: [{ name: 'sandbox starts', ok: false, detail }] }));
  }
  if (!probe.ok || !probe.runner) throw new SandboxUnavailableError(explainFailure(bwrapPath, probe));
  const runner = probe.runner;
  // slirp4netns present but unable to attach on this host: the operator's allowance still applies
  if (runner.setupNetwork?.kind === 'refuse' && allowHost) return new ConfiguredSandbox('bwrap', { ...runner, setupNetwork: { kind: 'host' } }, probe);
  return new ConfiguredSandbox('bwrap', runner, probe);
}

/** For tests and `kiln doctor`: forget cached probe results. */
export function clearProbeCache(): void {
  probes.clear();
}
