/**
 * Toolchains installed on the host (Go in /usr/local/go, rustup under ~/.cargo, pyenv, a JDK)
 * made visible to sandboxed commands: without them every `go test` exits 127. Found once per
 * process, bound read-only, named in the probe. And warm caches for the checks, kept so that no
 * run can poison another (see caches.ts).
 */
import { existsSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isExecutableFile } from '../process/system-paths.js';

/** Where the command's cache directory appears inside the sandbox. */
export const SANDBOX_CACHE = '/tmp/kiln-cache';

const TOOLS = ['go', 'cargo', 'rustc', 'python3', 'python', 'pip3', 'pytest', 'java', 'javac', 'mvn', 'gradle', 'ruby', 'bundle', 'deno', 'bun'] as const;
const STANDARD_BIN = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
/** the sandbox hides these: a toolchain under them must be bound back */
const MASKED = ['/home', '/root', '/run', '/tmp'];

export interface Toolchain {
  /** the tools found in this directory */
  tools: string[];
  bin: string;
  /** the install folder bound read-only into the sandbox (only when the sandbox would hide it) */
  bind?: string;
}

export interface Toolchains {
  found: Toolchain[];
  /** PATH entries to add after the system's, in the host PATH's order */
  path: string[];
  binds: string[];
  env: Record<string, string>;
}

const isUnder = (p: string, parent: string) => p === parent || p.startsWith(`${parent}/`);

/** The install folder of a bin dir: `/root/.cargo/bin` → `/root/.cargo`, `/root/.pyenv/shims` → `/root/.pyenv`. */
function installRoot(bin: string): string {
  const pyenv = /^(.*\/\.pyenv)\//.exec(`${bin}/`);
  if (pyenv) return pyenv[1]!;
  // ~/.cargo also holds the registry token (credentials.toml): its bin alone is enough (rustup's
  // proxies there find the toolchains through RUSTUP_HOME; CARGO_HOME is the run's cache)
  if (bin.endsWith('/.cargo/bin')) return bin;
  return /\/(bin|shims)$/.test(bin) ? dirname(bin) : bin;
}

/** Candidates: the worker's PATH (its own toolchains) and the usual install places. */
export function knownToolchainDirs(home: string): string[] {
  return [
    '/usr/local/go/bin',
    '/usr/lib/go/bin',
    join(home, 'go', 'bin'),
    join(home, '.cargo', 'bin'),
    join(home, '.pyenv', 'shims'),
    join(home, '.local', 'bin'),
    '/opt/java/bin',
  ];
}

function candidateDirs(env: NodeJS.ProcessEnv, known: string[]): string[] {
  const fromPath = (env.PATH ?? '').split(delimiter).filter((d) => isAbsolute(d) && !d.includes('node_modules'));
  return [...new Set([...fromPath, ...known])].filter((d) => !STANDARD_BIN.includes(d));
}

export function discoverToolchains(env: NodeJS.ProcessEnv = process.env, known = knownToolchainDirs(env.HOME ?? homedir())): Toolchains {
  const found: Toolchain[] = [];
  const out: Toolchains = { found, path: [], binds: [], env: {} };
  for (const bin of candidateDirs(env, known)) {
    const tools = TOOLS.filter((t) => isExecutableFile(join(bin, t)));
    if (!tools.length) continue;
    let real = bin;
    try {
      real = realpathSync(bin);
    } catch {
      continue;
    }
    const hidden = MASKED.some((m) => isUnder(real, m));
    const tc: Toolchain = { tools, bin, ...(hidden ? { bind: installRoot(real) } : {}) };
    found.push(tc);
    out.path.push(bin);
    if (tc.bind) out.binds.push(tc.bind);
  }
  const home = env.HOME ?? homedir();
  // rustup's proxies find their toolchains through RUSTUP_HOME, pyenv's shims through PYENV_ROOT
  const rustup = env.RUSTUP_HOME ?? join(home, '.rustup');
  if (found.some((t) => t.tools.includes('cargo')) && existsSync(rustup)) {
    out.env.RUSTUP_HOME = rustup;
    if (MASKED.some((m) => isUnder(rustup, m))) out.binds.push(rustup);
  }
  const pyenv = found.find((t) => t.bind?.endsWith('/.pyenv'));
  if (pyenv) out.env.PYENV_ROOT = pyenv.bind!;
  out.binds = [...new Set(out.binds)];
  return out;
}

let cached: Toolchains | undefined;
/** Found at worker start (the first command), then reused: installing a toolchain needs a restart. */
export function hostToolchains(): Toolchains {
  cached ??= discoverToolchains();
  return cached;
}

/** One line per toolchain for the probe and `kiln doctor`. */
export function describeToolchains(t: Toolchains = hostToolchains()): string {
  return t.found.length
    ? t.found.map((f) => `${f.tools.join('/')} in ${f.bin}${f.bind ? ` (bound read-only from ${f.bind})` : ''}`).join('; ')
    : 'none beyond the system directories';
}

/**
 * bwrap arguments for the toolchains (read-only) and the command's cache (read-write), added
 * after the masks and the private /tmp so both stay visible.
 */
export function toolchainBinds(cacheDir: string | undefined, t: Toolchains = hostToolchains()): string[] {
  const args: string[] = [];
  for (const b of t.binds) if (existsSync(b)) args.push('--ro-bind', b, b);
  if (cacheDir && existsSync(cacheDir)) args.push('--bind', cacheDir, SANDBOX_CACHE);
  return args;
}

/** Where each tool keeps its cache, all under one directory so one bind carries them. */
export function cacheEnv(root: string): Record<string, string> {
  return {
    GOCACHE: `${root}/go-build`,
    GOMODCACHE: `${root}/go-mod`,
    GOPATH: `${root}/gopath`,
    GOTOOLCHAIN: 'local',
    npm_config_cache: `${root}/npm`,
    PIP_CACHE_DIR: `${root}/pip`,
    CARGO_HOME: `${root}/cargo`,
    XDG_CACHE_HOME: `${root}/xdg`,
  };
}
