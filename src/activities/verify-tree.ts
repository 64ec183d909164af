/**
 * The tree the verifier judges: a fresh checkout of the base commit that the model never touched,
 * with the model's changes applied as git sees them (tracked and untracked files, nothing the
 * repo ignores), the protected paths put back as they were on the base, and dependencies from
 * the run's own setup. The model's worktree stays exactly as the model left it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { changedIniSections, changedJsonKeys, PROTECTED_SECTIONS, restoreJsonKeys, type ProtectedSet } from '../checks/protected.js';
import { kilnDir } from '../shared/paths.js';
import { realPathsInRepo } from '../policy/repo-config.js';
import { runExcludePathspecs } from '../store/clutter.js';
import { git, hardenedGit } from '../git/run.js';
import { dropNested, stageWorktree, type NestedFindings } from '../store/nested-repos.js';

export interface TreeFindings extends NestedFindings {
  /** every path the model's tree changes against the base */
  changed: string[];
  /** protected files and sections the model changed: put back in the verified tree */
  protectedChanged: string[];
  /** files the base's ignore rules ignore that the model's tree adds (a changed .gitignore): left out */
  ignoredAdded: string[];
}

export interface VerifyTree extends TreeFindings {
  dir: string;
  /** `git write-tree` of the tree the checks run on */
  tree: string;
  /** the model's worktree as a tree object, before anything was put back */
  modelTree: string;
  remove(): Promise<void>;
}

/** The model's worktree as a tree object, through a throwaway index (its own index is not touched). */
export async function worktreeTree(worktree: string, base: string, scratchDir: string): Promise<string> {
  return (await worktreeLook(worktree, base, scratchDir)).tree;
}

/** The model's worktree as a tree object, with what its nested repositories did to it (nested-repos.ts). */
export async function worktreeLook(worktree: string, base: string, scratchDir: string): Promise<NestedFindings & { tree: string }> {
  await mkdir(scratchDir, { recursive: true });
  const index = join(scratchDir, `tree-index-${randomBytes(6).toString('hex')}`);
  try {
    const g = await hardenedGit(worktree, { indexFile: index });
    await g.run(['read-tree', base]);
    const nested = new Set<string>();
    // tool clutter (__pycache__, .pytest_cache…) is not the model's change
    await stageWorktree(g, worktree, base, nested, await runExcludePathspecs(scratchDir));
    let tree = (await g.run(['write-tree'])).trim();
    const { dropped, gitlinksChanged } = await dropNested(g, worktree, base, tree, nested);
    if (dropped) tree = (await g.run(['write-tree'])).trim();
    return { tree, nestedRepos: [...nested].sort(), gitlinksChanged };
  } finally {
    await rm(index, { force: true });
  }
}

/** Files that differ between two trees (or a commit and a tree), with git's A/M/D/T status. */
export async function treeChanges(repo: string, from: string, to: string): Promise<Array<{ status: string; path: string }>> {
  const out = await git(repo, ['diff-tree', '-r', '-z', '--name-status', '--no-renames', from, to]);
  const parts = out.split('\0').filter(Boolean);
  const res: Array<{ status: string; path: string }> = [];
  for (let i = 0; i + 1 < parts.length; i += 2) res.push({ status: parts[i]!, path: parts[i + 1]! });
  return res;
}

async function blob(repo: string, treeish: string, path: string): Promise<string | undefined> {
  try {
    return await git(repo, ['show', `${treeish}:${path}`]);
  } catch {
    return undefined;
  }
}

/**
 * Checkouts a run's earlier verification left when its worker was killed (label `RUN-…`): a run
 * verifies one tree at a time, so any there when its next verification starts are leftovers.
 */
export async function removeLeftoverCheckouts(repo: string, runId: string): Promise<string[]> {
  const left = (await verifyCheckouts(repo)).filter((n) => checkoutRun(n) === runId);
  for (const n of left) await removeCheckout(repo, n, false);
  if (left.length) await git(repo, ['worktree', 'prune']).catch(() => undefined);
  return left;
}

/** A verification's checkout is named `RUN-LABEL-HEX`: LABEL the attempt, `base` or `cf` (the counterfactual). */
const CHECKOUT_NAME = /^(.+)-(?:\d+|base|cf)-[0-9a-f]{8}$/;

/** The run a checkout under .kiln/verify belongs to, read from its name; undefined for anything else there. */
export function checkoutRun(name: string): string | undefined {
  return CHECKOUT_NAME.exec(name)?.[1];
}

/** The names under the repo's .kiln/verify (checkouts in use and leftovers alike). */
export async function verifyCheckouts(repo: string): Promise<string[]> {
  return (await readdir(join(kilnDir(repo), 'verify')).catch(() => [] as string[])).sort();
}

/** Removes one checkout under .kiln/verify with its `git worktree` entry (`prune`: also the entries of any already gone). */
export async function removeCheckout(repo: string, name: string, prune = true): Promise<void> {
  const dir = join(kilnDir(repo), 'verify', name);
  await git(repo, ['worktree', 'remove', '--force', '--force', dir]).catch(() => rm(dir, { recursive: true, force: true }));
  if (prune) await git(repo, ['worktree', 'prune']).catch(() => undefined);
}

/** A fresh linked worktree of `base` under the repo's .kiln folder; removed by the caller. */
export async function pristineCheckout(repo: string, base: string, label: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = join(kilnDir(repo), 'verify', `${label}-${randomBytes(4).toString('hex')}`);
  await mkdir(dirname(dir), { recursive: true });
  await git(repo, ['worktree', 'add', '--detach', dir, base]);
  return {
    dir,
    async remove() {
      await git(repo, ['worktree', 'remove', '--force', '--force', dir]).catch(() => rm(dir, { recursive: true, force: true }));
      await git(repo, ['worktree', 'prune']).catch(() => undefined);
    },
  };
}

/** What `.kiln/config` brings from the user's checkout (not from the model's worktree). */
export async function bringIncludes(repo: string, dir: string, brought: { include: string[]; link: string[] }): Promise<void> {
  // real paths, refusing one that leads out of the repo (a symlink swapped in since prepare)
  for (const rel of brought.include) {
    const [from] = await realPathsInRepo(repo, [rel]);
    if (from) await cp(from, join(dir, rel), { recursive: true, force: true, verbatimSymlinks: true });
  }
  for (const rel of brought.link) {
    const [from] = await realPathsInRepo(repo, [rel]);
    if (from && !existsSync(join(dir, rel))) {
      await mkdir(dirname(join(dir, rel)), { recursive: true });
      await symlink(from, join(dir, rel));
    }
  }
}

/**
 * Builds the verified tree: base checkout → the model's tree → protected paths and sections back
 * to the base → ignored additions out. Returns the findings and the tree hash.
 */
export async function buildVerifyTree(opts: {
  repo: string;
  worktree: string;
  base: string;
  scratchDir: string;
  label: string;
  protect: ProtectedSet | null;
}): Promise<VerifyTree> {
  const { repo, base } = opts;
  const { tree: modelTree, nestedRepos, gitlinksChanged } = await worktreeLook(opts.worktree, base, opts.scratchDir);
  const changes = await treeChanges(repo, base, modelTree);
  const changed = changes.map((c) => c.path);
  const inBase = new Set(changes.filter((c) => c.status !== 'A').map((c) => c.path));
  const co = await pristineCheckout(repo, base, opts.label);
  try {
    const g = await hardenedGit(co.dir);
    // the base's own ignore rules decide what may cross: a model that un-ignores node_modules gets nothing through
    const added = changes.filter((c) => c.status === 'A').map((c) => c.path);
    const ignoredAdded = added.length ? await checkIgnored(co.dir, added) : [];

    await g.run(['read-tree', '--reset', '-u', modelTree]);
    const protectedChanged: string[] = [];
    const putBack = [...ignoredAdded];
    if (opts.protect) {
      for (const p of changed)
        if (opts.protect.isProtected(p)) {
          protectedChanged.push(p);
          putBack.push(p);
        }
    }
    for (const p of [...new Set(putBack)]) {
      if (inBase.has(p)) await g.run(['checkout', base, '--', p]);
      else await g.run(['rm', '-q', '-f', '--cached', '--ignore-unmatch', '--', p]).then(() => rm(join(co.dir, p), { force: true, recursive: true }));
    }
    if (opts.protect) {
      for (const [file, rule] of Object.entries(PROTECTED_SECTIONS)) {
        if (!changed.includes(file) || protectedChanged.includes(file) || !opts.protect.sectionsProtected(file)) continue;
        const before = await blob(repo, base, file);
        const after = await blob(repo, modelTree, file);
        if (rule.kind === 'json-keys') {
          const keys = changedJsonKeys(before, after, rule.keys);
          if (!keys.length) continue;
          protectedChanged.push(...keys.map((k) => `${file} (${k})`));
          if (after !== undefined) await writeFile(join(co.dir, file), restoreJsonKeys(before, after, rule.keys));
        } else {
          const sections = changedIniSections(before, after, rule.sections);
          if (!sections.length) continue;
          protectedChanged.push(...sections.map((s) => `${file} [${s}]`));
          // sections are judged, not merged back: the change fails verification on its own
        }
      }
    }
    await g.run(['add', '-A', '--', '.']);
    const tree = (await g.run(['write-tree'])).trim();
    return { dir: co.dir, tree, modelTree, changed, protectedChanged, ignoredAdded, nestedRepos, gitlinksChanged, remove: co.remove };
  } catch (err) {
    await co.remove();
    throw err;
  }
}

async function checkIgnored(dir: string, paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < paths.length; i += 200) {
    // --no-index: judged by the rules alone, as if each file were new; it prints the ignored ones
    const printed = await git(dir, ['check-ignore', '--no-index', '--', ...paths.slice(i, i + 200)]).catch(() => '');
    out.push(...printed.split('\n').filter(Boolean));
  }
  return out;
}
