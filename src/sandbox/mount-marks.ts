/**
 * What the paths a sandbox's mounts were made from and onto are on the host, to tell whether a
 * sandbox set up earlier (kept-sandbox.ts) is still the one a command would get now. A mount is
 * tied to the file it was made on: a masked file replaced on the host since (a new inode) would
 * show through a sandbox set up before it, so equal arguments are not enough.
 */
import { statSync } from 'node:fs';

/** bwrap options followed by paths a mount is made from or onto, with how many such paths. */
const MOUNT_PATHS: Record<string, number> = {
  '--bind': 2,
  '--ro-bind': 2,
  '--dev-bind': 2,
  '--bind-try': 2,
  '--ro-bind-try': 2,
  '--dev-bind-try': 2,
  '--tmpfs': 1,
};
/** the other options Kiln passes, with their argument counts, so that no argument is taken for an option */
const OTHER_ARGS: Record<string, number> = {
  '--uid': 1,
  '--gid': 1,
  '--symlink': 2,
  '--remount-ro': 1,
  '--dev': 1,
  '--proc': 1,
  '--size': 1,
  '--dir': 1,
  '--seccomp': 1,
  '--info-fd': 1,
  '--chdir': 1,
  '--setenv': 2,
  '--json-status-fd': 1,
  '--cap-drop': 1,
  '--perms': 1,
};

/**
 * What each path a mount is made from or onto is on the host now: equal strings, the same files.
 * A directory's ctime is left out (it changes whenever an entry is added, as the worktree's does);
 * a file's is in (a masked file written or replaced).
 */
export function mountMarks(argv: readonly string[]): string {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    const n = MOUNT_PATHS[a];
    if (n !== undefined) {
      for (let k = 1; k <= n; k++) out.push(mark(argv[i + k] ?? ''));
      i += n;
    } else i += OTHER_ARGS[a] ?? 0;
  }
  return out.join('\n');
}

function mark(path: string): string {
  try {
    const st = statSync(path, { bigint: true });
    return `${path}\0${st.dev}:${st.ino}${st.isDirectory() ? '' : `:${st.ctimeNs}`}`;
  } catch {
    return `${path}\0-`;
  }
}
