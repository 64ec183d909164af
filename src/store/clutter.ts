/**
 * Files that test runners and linters write as a side effect (bytecode, caches, coverage). In a
 * repo without a .gitignore they would land in the patch as binary diffs and trip the verifier's
 * protected-files check on a change no model made. Kiln's own git operations — the
 * patch, checkpoints, the changed-file list — leave them out by pathspec, so the user's checkout
 * and its ignore files are never touched.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** gitignore-style names; each matches at any depth, as a file or as a whole directory */
export const DEFAULT_EXCLUDES: readonly string[] = [
  '__pycache__',
  '*.pyc',
  '*.pyo',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.hypothesis',
  '.tox',
  '.coverage',
  '.coverage.*',
  'htmlcov',
  '.nyc_output',
  'node_modules/.cache',
  '.eslintcache',
];

/**
 * The list a run uses: the defaults plus `.kiln/config`'s `exclude`, where `!name` takes a
 * default back out (gitignore's negation), e.g. `["coverage", "!htmlcov"]`.
 */
export function excludeList(configured: readonly string[] = []): string[] {
  const drop = new Set(configured.filter((e) => e.startsWith('!')).map((e) => e.slice(1)));
  const add = configured.filter((e) => !e.startsWith('!'));
  return [...new Set([...DEFAULT_EXCLUDES.filter((e) => !drop.has(e)), ...add])];
}

/**
 * Git pathspecs that leave each entry out, at any depth, whether it names a file or a directory.
 * Always through `**\/`: `git add` refuses an exclude whose literal prefix names a path the repo's
 * .gitignore already ignores ("The following paths are ignored…"), a glob does not.
 */
export function excludePathspecs(list: readonly string[]): string[] {
  return clutterGlobs(list).map((g) => `:(exclude,glob)${g}`);
}

/** Each entry without its edge slashes (none left: no entry). */
function entries(list: readonly string[]): string[] {
  return list.map((raw) => raw.replace(/^\/+|\/+$/g, '')).filter(Boolean);
}

/** Each entry at any depth, as a file or as a whole directory: the globs both kinds of pathspec take. */
function clutterGlobs(list: readonly string[]): string[] {
  return entries(list).flatMap((e) => [`**/${e}`, `**/${e}/**`]);
}

/** The pathspecs that keep a run's clutter out of `git add -A`, from its run.json in the state dir. */
export async function runExcludePathspecs(stateDir: string): Promise<string[]> {
  return excludePathspecs(await runExcludeList(stateDir));
}

/** The run's exclude list (run.json in the state dir), or the defaults. */
export async function runExcludeList(stateDir: string): Promise<readonly string[]> {
  // read here, not through run-files.ts: `kiln run` imports this module, and run-files would bring
  // the redactor and its secretlint rules (~60 ms of start-up) into the CLI before the run starts
  const rec = await readFile(join(stateDir, 'run.json'), 'utf8')
    .then((text) => JSON.parse(text) as { exclude?: string[] })
    .catch(() => undefined);
  return rec?.exclude ?? DEFAULT_EXCLUDES;
}

/**
 * Whether any of `paths` could be clutter. A superset of what git's pathspecs match: a path with a
 * component that matches an entry contains the entry's longest literal run (compared without case,
 * in case git's is folded); an entry with no literal run at all makes every path a candidate.
 */
export function mayHoldClutter(paths: readonly string[], list: readonly string[]): boolean {
  if (paths.length === 0) return false;
  // a bracket expression or an escape is not read here: such an entry makes every path a candidate
  const runs = entries(list).map((e) => (/[[\\]/.test(e) ? '' : (e.split(/[*?]+/).sort((a, b) => b.length - a.length)[0] ?? '').toLowerCase()));
  if (runs.some((r) => r === '')) return true;
  return paths.some((p) => {
    const lower = p.toLowerCase();
    return runs.some((r) => lower.includes(r));
  });
}

/** Paths a git command takes per call: well under the kernel's limit on arguments. */
const PATHS_PER_CALL = 500;

/**
 * Clutter taken back out of an index that `git add -A` filled without exclude pathspecs: on a
 * 50,000-file worktree the ~30 pathspecs made each `add -A` ~240 ms against ~60 ms without, and
 * the look after every command paid it. Which of the changes from `base` to `tree` (the index
 * written) are clutter is git's own matching of the same pathspecs, run on the changes only; new
 * clutter leaves the index, changed tracked clutter gets the base's entry back, so the index ends
 * as `add -A` with the exclude pathspecs would have left it. `changed`, when the caller has the
 * changed paths, skips git where none of them can be clutter. Returns whether the index changed.
 */
export async function dropClutter(
  git: (args: readonly string[]) => Promise<string>,
  base: string,
  tree: string,
  list: readonly string[],
  changed?: readonly string[],
): Promise<boolean> {
  if (changed && !mayHoldClutter(changed, list)) return false;
  const picks = clutterGlobs(list).map((g) => `:(glob)${g}`);
  if (picks.length === 0) return false;
  const raw = await git(['diff-tree', '-r', '-z', '--raw', '--no-renames', base, tree, '--', ...picks]);
  const parts = raw.split('\0');
  const added: string[] = [];
  const tracked: string[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const status = parts[i]!.split(' ').pop();
    (status === 'A' ? added : tracked).push(`:(literal)${parts[i + 1]!}`);
  }
  for (let i = 0; i < added.length; i += PATHS_PER_CALL) {
    await git(['rm', '--cached', '-q', '-f', '--ignore-unmatch', '--', ...added.slice(i, i + PATHS_PER_CALL)]);
  }
  for (let i = 0; i < tracked.length; i += PATHS_PER_CALL) {
    // -q: no refresh of the whole index afterwards
    await git(['reset', '-q', base, '--', ...tracked.slice(i, i + PATHS_PER_CALL)]);
  }
  return added.length + tracked.length > 0;
}
