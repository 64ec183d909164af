/**
 * What a check's process tree did with files, read from the tracer's log (sandbox/tracer.ts):
 * which paths inside the checkout it read, looked for, wrote and executed, and which programs
 * and modules it took from outside (the toolchain). The verifier compares the base's run with the
 * verified tree's to learn how the tests reach each file the patch changed.
 */
import { createReadStream } from 'node:fs';
import { basename, dirname, extname, isAbsolute, join, normalize, relative } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * probe: looked up by name (a stat, a failed open) by a process that runs tests (it loaded a test
 * file, or descends from one that did), as code under test looks for its modules; runner-probe:
 * looked up by a process that runs none, as a runner looks for its configuration; exec-probe: a
 * failed exec, as a PATH search makes
 */
export type Access = 'read' | 'probe' | 'runner-probe' | 'write' | 'exec' | 'exec-probe';

export interface CheckTrace {
  /** checkout-relative path → what the check did with it */
  inside: Map<string, Set<Access>>;
  /** program name → the absolute paths it was executed from (inside the checkout: relative) */
  programs: Map<string, Set<string>>;
  /** names of Python modules the check loaded from outside the checkout */
  outsideModules: Set<string>;
  /**
   * files that only processes running no tests used (read, wrote or ran): the runner's own
   * configuration and wrappers. Empty when no process loaded a test file: then nobody can tell.
   */
  runnerOnly: Set<string>;
  /** lines the parser could not place (a cwd it lost track of): said in the report, never guessed */
  unplaced: number;
}

const CALL = /^(\d+)\s+(?:<\.\.\. (\w+) resumed>(.*)|(\w+)\((.*))$/;
const RESULT = /\)\s+=\s+(-?\d+|\?)(?:\s+(\w+))?/;
/** a quoted strace string: escapes kept as strace prints them */
const STRING = /"((?:[^"\\]|\\.)*)"/;

const PATH_CALLS: Record<string, { at: boolean; kind: 'open' | 'probe' | 'exec' }> = {
  open: { at: false, kind: 'open' },
  creat: { at: false, kind: 'open' },
  openat: { at: true, kind: 'open' },
  openat2: { at: true, kind: 'open' },
  stat: { at: false, kind: 'probe' },
  lstat: { at: false, kind: 'probe' },
  newfstatat: { at: true, kind: 'probe' },
  statx: { at: true, kind: 'probe' },
  access: { at: false, kind: 'probe' },
  faccessat: { at: true, kind: 'probe' },
  faccessat2: { at: true, kind: 'probe' },
  readlink: { at: false, kind: 'probe' },
  readlinkat: { at: true, kind: 'probe' },
  execve: { at: false, kind: 'exec' },
  execveat: { at: true, kind: 'exec' },
};

function unescape(s: string): string {
  return s.replace(/\\(x[0-9a-f]{2}|[0-7]{1,3}|.)/gi, (_, e: string) =>
    e[0] === 'x'
      ? String.fromCharCode(parseInt(e.slice(1), 16))
      : /^[0-7]+$/.test(e)
        ? String.fromCharCode(parseInt(e, 8))
        : e === 'n'
          ? '\n'
          : e === 't'
            ? '\t'
            : e,
  );
}

/** The module a Python file gives when its folder is on sys.path (`pkg/__init__.py` → pkg). */
export function pythonModuleName(path: string): string | undefined {
  if (extname(path) !== '.py') return undefined;
  const stem = basename(path, '.py');
  return stem === '__init__' ? basename(dirname(path)) : stem;
}

/** What the parser knows so far, shared by the steps that read one log. */
interface Reading {
  root: string;
  isTest: (path: string) => boolean;
  trace: CheckTrace;
  cwd: Map<string, string | undefined>;
  parent: Map<string, string>;
  /** processes that read a test file themselves */
  readTests: Set<string>;
  /** inside path → access → the processes that made it; settled once the whole log is read */
  seen: Map<string, Map<Access, Set<string>>>;
  /**
   * the calls of processes the log shows before the clone that made them returned: strace -f
   * prints a child's first calls while its parent's clone is still "unfinished" whenever the
   * child runs first (a loaded machine, a vfork). Held until the clone names the child, whose
   * cwd is then its parent's; placed without a cwd only if no clone ever names it.
   */
  unborn: Map<string, string[]>;
}

/**
 * Reads a tracer log. `root` is the checkout as the traced processes saw it (the sandbox binds it
 * at its host path); relative paths are resolved against each process's cwd, followed through
 * chdir and inherited on fork. `isTest` names the test files, which tell a lookup made by code
 * under test from a runner's search for its configuration.
 */
export async function readTrace(file: string, root: string, isTest: (path: string) => boolean = () => false): Promise<CheckTrace> {
  const trace: CheckTrace = { inside: new Map(), programs: new Map(), outsideModules: new Set(), runnerOnly: new Set(), unplaced: 0 };
  const r: Reading = { root, isTest, trace, cwd: new Map(), parent: new Map(), readTests: new Set(), seen: new Map(), unborn: new Map() };
  const pending = new Map<string, string>();
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const raw of lines) {
    let line = raw;
    const m0 = /^(\d+)\s+/.exec(line);
    if (!m0) continue;
    const pid = m0[1]!;
    if (line.endsWith('<unfinished ...>')) {
      pending.set(pid, line.slice(0, -'<unfinished ...>'.length).trimEnd());
      continue;
    }
    const resumed = /^(\d+)\s+<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed) {
      const start = pending.get(pid);
      pending.delete(pid);
      if (!start) continue;
      line = `${start}${resumed[2]}`;
    }
    take(r, pid, line);
  }
  for (const [pid, held] of r.unborn) {
    r.unborn.delete(pid);
    r.cwd.set(pid, undefined);
    for (const line of held) take(r, pid, line);
  }
  settleAccesses(trace, r.seen, r.parent, r.readTests);
  return trace;
}

/** One whole call of `pid`; a process not known yet waits for the clone that makes it (Reading.unborn). */
function take(r: Reading, pid: string, line: string): void {
  if (!r.cwd.has(pid)) {
    // the first process of the log starts in the checkout
    if (r.cwd.size === 0) r.cwd.set(pid, r.root);
    else {
      const held = r.unborn.get(pid);
      if (held) held.push(line);
      else r.unborn.set(pid, [line]);
      return;
    }
  }
  const child = placeCall(r, pid, line);
  const held = child !== undefined ? r.unborn.get(child) : undefined;
  if (child === undefined || !held) return;
  r.unborn.delete(child);
  for (const l of held) take(r, child, l);
}

/** Records one call of a known process; a successful fork or clone returns the child it made. */
function placeCall(r: Reading, pid: string, line: string): string | undefined {
  const { trace, cwd, root } = r;
  const m = CALL.exec(line);
  if (!m || !m[4]) return undefined;
  const call = m[4];
  const args = m[5]!;
  const res = RESULT.exec(args);
  const ret = res?.[1];
  const ok = ret !== undefined && ret !== '?' && !ret.startsWith('-');

  if (call === 'clone' || call === 'clone3' || call === 'fork' || call === 'vfork') {
    // inside the sandbox's PID namespace the return is that namespace's pid; strace adds its own
    const child = /\/\* (\d+) in strace's PID NS \*\//.exec(args)?.[1] ?? ret;
    if (!ok || !child || child === '0') return undefined;
    cwd.set(child, cwd.get(pid));
    r.parent.set(child, pid);
    return child;
  }
  if (call === 'chdir') {
    const s = STRING.exec(args);
    if (ok && s) {
      const at = cwd.get(pid);
      const p = unescape(s[1]!);
      cwd.set(pid, isAbsolute(p) ? normalize(p) : at ? join(at, p) : undefined);
    }
    return undefined;
  }
  if (call === 'fchdir') {
    if (ok) cwd.set(pid, undefined);
    return undefined;
  }
  const spec = PATH_CALLS[call];
  if (!spec) return undefined;
  // the *at calls: a path relative to a directory fd other than the cwd cannot be placed
  if (spec.at && !/^AT_FDCWD,/.test(args) && !/^\d+,\s*"\//.test(args)) {
    trace.unplaced += 1;
    return undefined;
  }
  const s = STRING.exec(args);
  if (!s) return undefined;
  const raw = unescape(s[1]!);
  if (raw === '') return undefined;
  const base = cwd.get(pid);
  if (!isAbsolute(raw) && base === undefined) {
    trace.unplaced += 1;
    return undefined;
  }
  const abs = isAbsolute(raw) ? normalize(raw) : join(base!, raw);
  const rel = relative(root, abs);
  const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  let access: Access;
  if (spec.kind === 'exec') access = ok ? 'exec' : 'exec-probe';
  else if (spec.kind === 'open') access = !ok ? 'probe' : /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(args) || call === 'creat' ? 'write' : 'read';
  else access = 'probe';
  if (access === 'read' && inside && r.isTest(rel)) r.readTests.add(pid);
  if (access === 'exec') {
    const name = basename(abs);
    let set = trace.programs.get(name);
    if (!set) trace.programs.set(name, (set = new Set()));
    set.add(inside ? rel : abs);
  }
  if (inside) {
    let byAccess = r.seen.get(rel);
    if (!byAccess) r.seen.set(rel, (byAccess = new Map()));
    let pids = byAccess.get(access);
    if (!pids) byAccess.set(access, (pids = new Set()));
    pids.add(pid);
  } else if (access === 'read') {
    const mod = pythonModuleName(abs);
    if (mod) trace.outsideModules.add(mod);
  }
  return undefined;
}

/** The accesses of each inside path, settled once the whole log is read: who made them (a runner or its tests) is known then. */
function settleAccesses(trace: CheckTrace, seen: Map<string, Map<Access, Set<string>>>, parent: Map<string, string>, readTests: Set<string>): void {
  // a process runs tests when it or one of its ancestors loaded a test file; a check that loads no
  // test file at all (a build, a linter, `test -f`) cannot be split into runner and tests: all of it counts
  const testing = new Map<string, boolean>();
  const runsTests = (pid: string): boolean => {
    if (!readTests.size) return true;
    const known = testing.get(pid);
    if (known !== undefined) return known;
    testing.set(pid, false);
    const up = parent.get(pid);
    const yes = readTests.has(pid) || (up !== undefined && runsTests(up));
    testing.set(pid, yes);
    return yes;
  };
  for (const [rel, byAccess] of seen) {
    const set = new Set<Access>();
    let usedByTests = false;
    let used = false;
    for (const [access, pids] of byAccess) {
      const byTests = [...pids].some(runsTests);
      set.add(access === 'probe' && !byTests ? 'runner-probe' : access);
      if (access === 'read' || access === 'write' || access === 'exec') {
        used = true;
        usedByTests ||= byTests;
      }
    }
    trace.inside.set(rel, set);
    if (used && !usedByTests && readTests.size) trace.runnerOnly.add(rel);
  }
}

/** Whether the check used the file itself (read, wrote or ran it), not only looked for it. */
export const used = (trace: CheckTrace, path: string): boolean => {
  const a = trace.inside.get(path);
  return !!a && (a.has('read') || a.has('write') || a.has('exec'));
};

/**
 * Whether the check reached the path as code or data, or as a name code under test looked for (a
 * module that was missing). A runner's search for its configuration, and a failed exec (a PATH
 * search), look in every place they know, not for this file.
 */
export const reached = (trace: CheckTrace, path: string): boolean => {
  const a = trace.inside.get(path);
  return !!a && (a.has('read') || a.has('write') || a.has('exec') || a.has('probe'));
};
