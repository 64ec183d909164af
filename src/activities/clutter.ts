/**
 * Files that test runners and linters write as a side effect (bytecode, caches, coverage). In a
 * repo without a .gitignore they would land in the patch as binary diffs and trip the verifier's
 * protected-files check on a change no model made (issue 13). Kiln's own git operations — the
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
  return list.flatMap((raw) => {
    const e = raw.replace(/^\/+|\/+$/g, '');
    if (!e) return [];
    return [`:(exclude,glob)**/${e}`, `:(exclude,glob)**/${e}/**`];
  });
}

/** The pathspecs that keep a run's clutter out of `git add -A`, from its run.json in the state dir. */
export async function runExcludePathspecs(stateDir: string): Promise<string[]> {
  // read here, not through run-files.ts: `kiln run` imports this module, and run-files would bring
  // the redactor and its secretlint rules (~60 ms of start-up) into the CLI before the run starts
  const rec = await readFile(join(stateDir, 'run.json'), 'utf8')
    .then((text) => JSON.parse(text) as { exclude?: string[] })
    .catch(() => undefined);
  return excludePathspecs(rec?.exclude ?? DEFAULT_EXCLUDES);
}
