/**
 * Private temporary directories named for the process that made them: its PID namespace, pid and
 * start time. A process killed with SIGKILL (the OOM killer, a crash test) runs no exit handler,
 * and each such kill left its directory in /tmp for good; a later process of Kiln now tells that
 * the owner is gone and removes what it left. Only directories of this user and of this PID
 * namespace are touched: another namespace's pids cannot be looked up from here.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { mkdtempSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** this process's PID namespace, as /proc names it */
function pidNamespace(): string | undefined {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
  } catch {
    return undefined;
  }
}

/** `<pid namespace>.<pid>.<start time in clock ticks>` of a live process, or undefined */
export function processTag(pid: number, ns = pidNamespace()): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the fields after the command name, which may itself hold spaces and parentheses; field 22 is the start time
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return ns && start && /^\d+$/.test(start) ? `${ns}.${pid}.${start}` : undefined;
  } catch {
    return undefined;
  }
}

const swept = new Set<string>();

/**
 * A new 0700 directory `<base>/<prefix><tag>-XXXXXX` owned by this process. The first one of each
 * prefix also starts, in the background, the removal of those whose owner is gone.
 */
export function ownedTempDir(prefix: string, base = tmpdir()): string {
  const tag = processTag(process.pid);
  const dir = mkdtempSync(join(base, tag ? `${prefix}${tag}-` : prefix));
  if (tag && !swept.has(`${base}\0${prefix}`)) {
    swept.add(`${base}\0${prefix}`);
    void sweepLeftDirs(prefix, base);
  }
  return dir;
}

/** Removes `<base>/<prefix><tag>-*` directories of this user whose process is gone; best effort. */
export async function sweepLeftDirs(prefix: string, base = tmpdir()): Promise<string[]> {
  const ns = pidNamespace();
  if (!ns) return [];
  const removed: string[] = [];
  let names: string[];
  try {
    names = await readdir(base);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)\.(\d+)\.(\d+)-[^/]+$/.exec(name.slice(prefix.length));
    if (!m || m[1] !== ns) continue;
    // a live owner, or a new process that has the pid now: its start time is not the one named
    if (processTag(Number(m[2]), ns) === `${m[1]}.${m[2]}.${m[3]}`) continue;
    const path = join(base, name);
    try {
      const st = await lstat(path);
      // not a link someone put in our name, nor another user's directory
      if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
      await rm(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // gone already (another process swept it), or not ours to remove
    }
  }
  return removed;
}
