/**
 * Commands that only read the worktree, from the policy's parse (its segments: every simple
 * command, wrappers and substitutions unwrapped, with its redirections). Such a command runs with
 * the worktree bound read-only (sandbox/bwrap-args.ts), and then the look at the worktree after
 * it (a `git add -A`) is left out: the kernel, not this list, is what makes "it changed nothing"
 * true. A command this list gets wrong fails on a read-only file system (EROFS) and changes
 * nothing; it never changes the worktree unseen. So the list is short, plain readers only, and
 * anything unknown is a writer.
 */
import type { CommandSegment } from './types.js';

/** Programs that write no file whatever their arguments (sort -o, sed w, awk, tee do: not here). */
const READERS = new Set([
  'cat',
  'echo',
  'printf',
  'ls',
  'head',
  'tail',
  'wc',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'pwd',
  'cd',
  'true',
  'false',
  'test',
  '[',
  '[[',
  '((',
  'stat',
  'which',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'du',
  'nl',
  'cut',
  'tr',
  'diff',
  'cmp',
  'date',
  'uname',
  'id',
  'whoami',
]);

/** find's actions that write or run something; any other find only reads. */
const FIND_WRITES = /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/;

/** git subcommands that read (git's own directory is read-only in the sandbox anyway). */
const GIT_READERS = new Set(['status', 'diff', 'log', 'show', 'ls-files', 'grep', 'blame', 'rev-parse', 'cat-file', 'ls-tree', 'describe', 'shortlog']);

/**
 * Redirections that write no file: input (`<`, here-documents and here-strings), duplicating or
 * closing a descriptor (`2>&1`, `>&-`), and output to /dev/null. `<>` opens for writing.
 */
function redirectWritesNothing(r: string): boolean {
  const t = r.trim();
  if (/^\d*<(?!>)/.test(t)) return true;
  if (/^\d*>&\s*(\d+|-)$/.test(t)) return true;
  return /^(\d*|&)>>?\|?\s*\/dev\/null$/.test(t);
}

function segmentWritesNothing(s: CommandSegment): boolean {
  if (!(s.redirects ?? []).every(redirectWritesNothing)) return false;
  const [program, ...args] = s.argv;
  // assignments alone, a function definition's own line: nothing runs
  if (program === undefined) return true;
  if (READERS.has(program)) return true;
  if (program === 'find') return !args.some((a) => FIND_WRITES.test(a));
  // file -C compiles a magic file into the current directory
  if (program === 'file') return !args.some((a) => a === '--compile' || /^-[A-Za-z]*C/.test(a));
  // the subcommand first: `git -C dir …` or `git -c key=value …` could point it anywhere
  if (program === 'git') return GIT_READERS.has(args[0] ?? '') && !args.some((a) => /^--output(=|$)/.test(a));
  return false;
}

/** True when every part of the command is a plain reader with no output redirected to a file. */
export function writesNothing(segments: readonly CommandSegment[]): boolean {
  return segments.length > 0 && segments.every(segmentWritesNothing);
}
