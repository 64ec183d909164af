import { opendirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { isInside } from './paths.js';

/**
 * Directory entries one command's globs may read in all. A glob that needs more is not judged
 * file by file: a person checks it. (This repository's `src/*` reads ~20; `**` over it ~1,000.)
 */
const GLOB_MAX_ENTRIES = 10_000;
/** Files one glob may match; judging more would hide the one that matters among them. */
export const GLOB_MAX_MATCHES = 2_000;
/**
 * Time one command's globs may spend listing directories. `cat /*\/*\/…` (300 segments) walked
 * the host for 31 s and blocked the run; a worktree's globs list in a few milliseconds.
 */
export const GLOB_BUDGET_MS = 50;

type Expansion =
  /** what the shell would pass: the matching paths, or the pattern itself when nothing matches */
  | { kind: 'paths'; paths: string[] }
  /** the pattern lists a directory outside the worktree (or through a symlink leading out): never listed */
  | { kind: 'outside' }
  /** more entries, matches or time than the budget allows */
  | { kind: 'too-broad' };

/** What one command's globs have spent; shared by all the globs of the command. */
export class GlobBudget {
  entries = 0;
  private deadline: number | undefined;

  spent(): boolean {
    this.deadline ??= performance.now() + GLOB_BUDGET_MS;
    return this.entries > GLOB_MAX_ENTRIES || performance.now() > this.deadline;
  }
}

/**
 * Expands an unquoted glob (an absolute, lexically resolved path) against the disk, as the shell
 * would without globstar — but only in directories whose real path is inside `root`, the worktree.
 */
export function expandGlob(abs: string, root: string, budget: GlobBudget): Expansion {
  let bases = ['/'];
  for (const part of abs.split('/').filter(Boolean)) {
    const next: string[] = [];
    if (!/[*?[]/.test(part)) {
      for (const b of bases) next.push(join(b, part));
    } else {
      const isMatch = picomatch(part.replace(/\*\*/g, '*'), { dot: part.startsWith('.') });
      for (const b of bases) {
        let real: string;
        try {
          real = realpathSync(b);
        } catch {
          continue; // not there: nothing matches
        }
        if (!isInside(root, real)) return { kind: 'outside' };
        const listed = list(b, budget);
        if (listed === null) return { kind: 'too-broad' };
        for (const e of listed) if (isMatch(e)) next.push(join(b, e));
        if (next.length > GLOB_MAX_MATCHES) return { kind: 'too-broad' };
      }
    }
    if (next.length === 0) return { kind: 'paths', paths: [abs] };
    bases = next;
  }
  return { kind: 'paths', paths: bases };
}

/** A directory's names, read one at a time so a huge directory stops at the budget; null when spent. */
function list(dir: string, budget: GlobBudget): string[] | null {
  let d;
  try {
    d = opendirSync(dir);
  } catch {
    return []; // not a directory: nothing matches
  }
  const names: string[] = [];
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) {
      budget.entries++;
      if (budget.spent()) return null;
      names.push(e.name);
    }
  } catch {
    /* unreadable midway: what was read */
  } finally {
    d.closeSync();
  }
  return budget.spent() ? null : names;
}
