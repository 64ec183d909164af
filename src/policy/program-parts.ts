/**
 * The parts a program's judge is built from, shared by the program table (programs.ts) and the
 * judges it hands whole programs to (git.ts), so neither imports the other.
 */
import type { ShellCommand, Word } from '../shell/parse.js';
import type { PolicyContext } from './types.js';
import type { Verdict } from './verdict.js';

/** What the program table needs from the command judge (paths, cwd, nested shells). */
export interface ProgramJudge {
  readonly ctx: PolicyContext;
  readonly cwd: string;
  readonly home: string;
  readonly functions: Set<string>;
  pathOf(w: Word): string | null;
  readPaths(ws: readonly Word[]): Verdict[];
  writePaths(ws: readonly Word[]): Verdict[];
  sensitiveArgs(ws: readonly Word[]): Verdict[];
  cd(w: Word | undefined): Verdict;
  nested(src: string, via: string[], depth: number): Promise<void>;
  /** the commands whose output flows, through pipes, into this one */
  readonly upstream: readonly ShellCommand[];
  /** ask, with the file's content, when `w` names a file this run wrote; null otherwise */
  runsWritten(w: Word, how: string): Verdict | null;
}

export type ProgramResult = (Verdict & { extra?: Verdict[] }) | { unwrap: Word[]; via: string; verdicts?: Verdict[] };

/** Positional arguments: options skipped, with the value of those in `valueOpts`; everything after `--`. */
export function positionals(args: readonly Word[], valueOpts: readonly string[] = []): Word[] {
  const out: Word[] = [];
  let rest = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (rest) out.push(a);
    else if (a.value === '--') rest = true;
    else if (a.value.startsWith('-') && a.value !== '-') {
      if (valueOpts.includes(a.value)) i++;
    } else out.push(a);
  }
  return out;
}

/** The files a unified diff changes (`+++ b/src/x.ts`), with `-pN` leading parts stripped. */
export function diffTargets(diff: string, strip: number): string[] {
  const out: string[] = [];
  for (const m of diff.matchAll(/^(?:\+\+\+|---) ([^\t\n]+)/gm)) {
    const p = m[1]!.trim();
    if (p === '/dev/null') continue;
    const parts = p.split('/');
    out.push(parts.slice(Math.min(strip, parts.length - 1)).join('/'));
  }
  return [...new Set(out)];
}
