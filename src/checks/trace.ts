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

/**
 * Reads a tracer log. `root` is the checkout as the traced processes saw it (the sandbox binds it
 * at its host path); relative paths are resolved against each process's cwd, followed through
 * chdir and inherited on fork. `isTest` names the test files, which tell a lookup made by code
 * under test from a runner's search for its configuration.
 */
export async function readTrace(file: string, root: string, isTest: (path: string) => boolean = () => false): Promise<CheckTrace> {
  const trace: CheckTrace = { inside: new Map(), programs: new Map(), outsideModules: new Set(), runnerOnly: new Set(), unplaced: 0 };
  const cwd = new Map<string, string | undefined>();
  const parent = new Map<string, string>();
  /** processes that read a test file themselves */
  const readTests = new Set<string>();
  /** inside path → access → the processes that made it; settled once the whole log is read */
  const seen = new Map<string, Map<Access, Set<string>>>();
  const pending = new Map<string, string>();
  const cwdOf = (pid: string) => (cwd.has(pid) ? cwd.get(pid) : cwd.size === 0 ? root : undefined);
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const raw of lines) {
    let line = raw;
    const unfinished = line.endsWith('<unfinished ...>');
    const m0 = /^(\d+)\s+/.exec(line);
    if (!m0) continue;
    const pid = m0[1]!;
    if (unfinished) {
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
    const m = CALL.exec(line);
    if (!m || !m[4]) continue;
    const call = m[4];
    const args = m[5]!;
    const res = RESULT.exec(args);
    const ret = res?.[1];
    const ok = ret !== undefined && ret !== '?' && !ret.startsWith('-');
    if (!cwd.has(pid) && cwd.size === 0) cwd.set(pid, root);

    if (call === 'clone' || call === 'clone3' || call === 'fork' || call === 'vfork') {
      // inside the sandbox's PID namespace the return is that namespace's pid; strace adds its own
      const child = /\/\* (\d+) in strace's PID NS \*\//.exec(args)?.[1] ?? ret;
      if (ok && child && child !== '0') {
        cwd.set(child, cwdOf(pid));
        parent.set(child, pid);
      }
      continue;
    }
    if (call === 'chdir') {
      const s = STRING.exec(args);
      if (ok && s) {
        const at = cwdOf(pid);
        const p = unescape(s[1]!);
        cwd.set(pid, isAbsolute(p) ? normalize(p) : at ? join(at, p) : undefined);
      }
      continue;
    }
    if (call === 'fchdir') {
      if (ok) cwd.set(pid, undefined);
      continue;
    }
    const spec = PATH_CALLS[call];
    if (!spec) continue;
    // the *at calls: a path relative to a directory fd other than the cwd cannot be placed
    if (spec.at && !/^AT_FDCWD,/.test(args) && !/^\d+,\s*"\//.test(args)) {
      trace.unplaced += 1;
      continue;
    }
    const s = STRING.exec(args);
    if (!s) continue;
    const raw2 = unescape(s[1]!);
    if (raw2 === '') continue;
    const base = cwdOf(pid);
    if (!isAbsolute(raw2) && base === undefined) {
      trace.unplaced += 1;
      continue;
    }
    const abs = isAbsolute(raw2) ? normalize(raw2) : join(base!, raw2);
    const rel = relative(root, abs);
    const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
    let access: Access;
    if (spec.kind === 'exec') access = ok ? 'exec' : 'exec-probe';
    else if (spec.kind === 'open') access = !ok ? 'probe' : /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(args) || call === 'creat' ? 'write' : 'read';
    else access = 'probe';
    if (access === 'read' && inside && isTest(rel)) readTests.add(pid);
    if (access === 'exec') {
      const name = basename(abs);
      let set = trace.programs.get(name);
      if (!set) trace.programs.set(name, (set = new Set()));
      set.add(inside ? rel : abs);
    }
    if (inside) {
      let byAccess = seen.get(rel);
      if (!byAccess) seen.set(rel, (byAccess = new Map()));
      let pids = byAccess.get(access);
      if (!pids) byAccess.set(access, (pids = new Set()));
      pids.add(pid);
    } else if (access === 'read') {
      const mod = pythonModuleName(abs);
      if (mod) trace.outsideModules.add(mod);
    }
  }
  settleAccesses(trace, seen, parent, readTests);
  return trace;
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
