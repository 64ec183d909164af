import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { SandboxLimits } from './limits.js';

/**
 * A cgroup per command run, when the host lets us make one (root with cgroup v1 controllers, or a
 * delegated cgroup v2 subtree). It gives what process groups and rlimits cannot: a process limit
 * that binds root (pids.max), a resident-memory limit that Node's huge address space reservations
 * do not trip, and a way to find every process the command left behind, even ones that escaped
 * the process group with setsid.
 */
export interface RunCgroup {
  /**
   * The files the launcher writes 0 (itself) into before exec. On v1, `tasks`: moving only the
   * calling thread (the launcher has one) skips the kernel's global lock that whole-process moves
   * through cgroup.procs take, and the first such move after a quiet spell waits a whole RCU grace
   * period, ~10 ms a hierarchy here, every command. v2 domain cgroups take only cgroup.procs.
   */
  readonly joinFiles: string[];
  /** which limits are in force, for the probe report */
  readonly limits: string[];
  killAll(): Promise<void>;
  remove(): Promise<void>;
}

export interface CgroupDeps {
  root: string;
  procSelfCgroup: string;
}

const defaultDeps: CgroupDeps = { root: '/sys/fs/cgroup', procSelfCgroup: '/proc/self/cgroup' };

interface Membership {
  v1: Map<string, string>;
  v2?: string;
}

function readMembership(file: string): Membership {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { v1 };
  }
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, id, controllers, path] = m;
    if (id === '0' && controllers === '') v2 = path;
    else for (const c of controllers!.split(',')) v1.set(c, path!);
  }
  return v2 === undefined ? { v1 } : { v1, v2 };
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const reapedParents = new Set<string>();

/**
 * A worker that was SIGKILLed never removed its cgroups, and anything that escaped its PDEATHSIG
 * (a command started in the instant the worker died) still runs in them. The cgroup name carries
 * the worker's pid: the first run in each parent cleans up after workers that are gone.
 */
function reapOrphans(parent: string): void {
  if (reapedParents.has(parent)) return;
  reapedParents.add(parent);
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
    const m = /^kiln-(\d+)-[0-9a-f]+$/.exec(entry);
    if (!m || Number(m[1]) === process.pid || isAlive(Number(m[1]))) continue;
    const dir = `${parent}/${entry}`;
    void killAll([dir]).then(() => rmdirQuiet(dir));
  }
}

function tryMkdir(dir: string): boolean {
  reapOrphans(dir.slice(0, dir.lastIndexOf('/')));
  try {
    mkdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

interface Controller {
  name: 'pids' | 'memory';
  v1File: string;
  v2File: string;
  value: (limits: SandboxLimits) => number;
}

const CONTROLLERS: Controller[] = [
  { name: 'pids', v1File: 'pids.max', v2File: 'pids.max', value: (l) => l.maxProcesses },
  { name: 'memory', v1File: 'memory.limit_in_bytes', v2File: 'memory.max', value: (l) => l.memoryBytes },
];

function unifiedMount(root: string): string | undefined {
  if (existsSync(`${root}/cgroup.controllers`)) return root;
  if (existsSync(`${root}/unified/cgroup.controllers`)) return `${root}/unified`;
  return undefined;
}

export function createRunCgroup(limits: SandboxLimits, deps: CgroupDeps = defaultDeps): RunCgroup | undefined {
  const membership = readMembership(deps.procSelfCgroup);
  const name = `kiln-${process.pid}-${randomBytes(4).toString('hex')}`;
  const dirs: string[] = [];
  const joinFiles: string[] = [];
  const applied: string[] = [];

  const missing: Controller[] = [];
  for (const c of CONTROLLERS) {
    const path = membership.v1.get(c.name);
    const parent = path === undefined ? undefined : `${deps.root}/${c.name}${path === '/' ? '' : path}`;
    if (parent && existsSync(`${parent}/cgroup.procs`)) {
      const dir = `${parent}/${name}`;
      if (tryMkdir(dir)) {
        if (tryWrite(`${dir}/${c.v1File}`, String(c.value(limits)))) {
          dirs.push(dir);
          joinFiles.push(`${dir}/tasks`);
          applied.push(`${c.name} (cgroup v1 ${c.v1File}=${c.value(limits)})`);
          continue;
        }
        rmdirQuiet(dir);
      }
    }
    missing.push(c);
  }

  const mount = unifiedMount(deps.root);
  if (missing.length > 0 && mount && membership.v2 !== undefined) {
    const parent = membership.v2 === '/' ? mount : `${mount}${membership.v2}`;
    let enabled: string[] = [];
    try {
      enabled = readFileSync(`${parent}/cgroup.subtree_control`, 'utf8').trim().split(/\s+/);
    } catch {
      /* not delegated to us */
    }
    const usable = missing.filter((c) => enabled.includes(c.name));
    if (usable.length > 0) {
      const dir = `${parent}/${name}`;
      if (tryMkdir(dir)) {
        const ok = usable.filter((c) => tryWrite(`${dir}/${c.v2File}`, String(c.value(limits))));
        if (ok.length > 0) {
          dirs.push(dir);
          joinFiles.push(`${dir}/cgroup.procs`);
          for (const c of ok) applied.push(`${c.name} (cgroup v2 ${c.v2File}=${c.value(limits)})`);
        } else rmdirQuiet(dir);
      }
    }
  }

  if (dirs.length === 0) return undefined;
  return {
    joinFiles,
    limits: applied,
    killAll: () => killAll(dirs),
    remove: async () => {
      await killAll(dirs);
      for (const d of dirs) await rmdirWhenReaped(d);
    },
  };
}

/** A killed member holds its cgroup until its parent reaps it (a server's orphan, reaped by the sandbox's init): a moment more, at most ~1 s. */
async function rmdirWhenReaped(dir: string): Promise<void> {
  for (let round = 0; round < 40; round++) {
    try {
      rmdirSync(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EBUSY') return;
    }
    await sleep(25);
  }
}

function rmdirQuiet(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    /* still busy or already gone: a leftover empty cgroup is harmless */
  }
}

function pidsIn(dir: string): number[] {
  try {
    // never 0 or less: process.kill would take that as this process's own group
    return readFileSync(`${dir}/cgroup.procs`, 'utf8')
      .split('\n')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * v2 has cgroup.kill; v1 has not, so we SIGKILL every member until none is left. Members may fork
 * between reading and killing, but pids.max bounds how many there can be, so a few rounds suffice.
 */
async function killAll(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    if (existsSync(`${dir}/cgroup.kill`) && tryWrite(`${dir}/cgroup.kill`, '1')) continue;
    for (let round = 0; round < 100; round++) {
      const pids = pidsIn(dir);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await sleep(round < 10 ? 5 : 20);
    }
  }
}
