/**
 * Git repositories of their own inside the worktree: a vendored checkout, `git init vendor/fmt`,
 * a submodule. The rule every tree Kiln builds from a worktree follows (looks, checkpoints, the
 * patch, the verified tree):
 *
 * - a nested repository where the base has no gitlink is not part of the change: left out, as if
 *   it were not there (the base's entries for its path stay), and said;
 * - a gitlink the base has (a submodule) stays: not checked out, the base's commit; a repository
 *   checked out there gives the commit it has checked out, and a moved gitlink is reported.
 *
 * Host git must never compare an index gitlink with a repository checked out at its path: to learn
 * whether it is dirty, git runs `git status` inside it, and that git reads the nested repository's
 * own config — a clean filter there runs with the worker's rights. So every `add -A` here leaves
 * every gitlink path out, and a submodule's commit is read by adding its path as new (a new gitlink
 * only resolves the nested HEAD, it runs nothing).
 */
import { existsSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { HardenedGit } from '../git/run.js';
import { GitError } from '../git/run.js';

/** What a worktree's nested repositories did to the tree built from it. */
export interface NestedFindings {
  /** nested repositories the base does not track: left out of the tree */
  nestedRepos: string[];
  /** submodules (gitlinks of the base) the tree moves to another commit */
  gitlinksChanged: string[];
}

const GITLINK = '160000';
const literal = (p: string) => `:(literal)${p}`;

/** base commit → its gitlink paths; a commit's content never changes */
const gitlinksOf = new Map<string, string[]>();
const MAX_BASES = 64;

/** Paths where `base` records a gitlink (a submodule). */
export async function baseGitlinks(g: HardenedGit, base: string): Promise<string[]> {
  const kept = gitlinksOf.get(base);
  if (kept) return kept;
  const out = await g.run(['ls-tree', '-r', '-z', '--full-tree', base]);
  const links: string[] = [];
  for (const entry of out.split('\0')) {
    // "<mode> <type> <oid>\t<path>"
    if (!entry.startsWith(`${GITLINK} `)) continue;
    const tab = entry.indexOf('\t');
    if (tab > 0) links.push(entry.slice(tab + 1));
  }
  // only a commit id names the same content for ever (HEAD moves)
  if (/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(base)) {
    if (gitlinksOf.size >= MAX_BASES) gitlinksOf.clear();
    gitlinksOf.set(base, links);
  }
  return links;
}

/**
 * `git add -A` of the worktree into `g`'s index (with the caller's extra pathspecs), nested
 * repositories kept out by the rule above. `nested` holds the nested repositories already known
 * (kept between the looks on one index) and gets the ones found here.
 */
export async function stageWorktree(g: HardenedGit, worktree: string, base: string, nested: Set<string>, pathspecs: readonly string[] = []): Promise<void> {
  const links = await baseGitlinks(g, base);
  // a known one that is no longer a repository is plain files again
  for (const p of nested) if (!existsSync(join(worktree, p, '.git'))) nested.delete(p);
  for (;;) {
    const out = [...links, ...nested].map((p) => `:(exclude,literal)${p}`);
    const failed = await g.run(['add', '-A', '--', '.', ...pathspecs, ...out]).then(
      () => undefined,
      (err: unknown) => (err instanceof GitError ? err : Promise.reject(err)),
    );
    if (!failed) break;
    // a nested repository with no commit checked out fails the whole add: find them, leave them out
    const found = (await untrackedRepos(g)).filter((p) => !nested.has(p));
    if (!found.length) throw failed;
    await leaveOut(g, base, found, nested);
  }
  for (const p of links) await stageGitlink(g, worktree, base, p);
}

/** Nested repositories among the untracked paths: git lists each as its path with a slash. */
async function untrackedRepos(g: HardenedGit): Promise<string[]> {
  const out = await g.run(['ls-files', '-z', '--others', '--exclude-standard']);
  return out
    .split('\0')
    .filter((p) => p.endsWith('/'))
    .map((p) => p.slice(0, -1));
}

/** The base's entries back for each path (an index kept between looks may hold what was there before). */
async function leaveOut(g: HardenedGit, base: string, paths: readonly string[], nested: Set<string>): Promise<void> {
  for (const p of paths) nested.add(p);
  // -q: no refresh of the whole index afterwards
  if (paths.length) await g.run(['reset', '-q', base, '--', ...paths.map(literal)]);
}

/** A submodule's entry as the worktree has it: gone, not checked out (the base's), or the commit checked out there. */
async function stageGitlink(g: HardenedGit, worktree: string, base: string, p: string): Promise<void> {
  const st = await lstat(join(worktree, p)).catch(() => undefined);
  if (st?.isDirectory() && !existsSync(join(worktree, p, '.git'))) return;
  await g.run(['update-index', '--force-remove', '--', p]);
  if (!st) return;
  // added as new: git resolves the nested HEAD and runs nothing inside it
  const res = await g.result(['add', '--', literal(p)]);
  // no commit checked out there: the base's commit stays
  if (res.exitCode !== 0) await g.run(['reset', '-q', base, '--', literal(p)]);
}

/**
 * After `write-tree`: a directory holding a `.git` where the base has nothing (a nested repository
 * with commits, which `add -A` records as a gitlink, or files an index kept between looks took in
 * before the directory became a repository) goes back to the base's entries and into `nested`;
 * gitlinks of the base that moved are reported. `changed` (the paths the tree changes, when the
 * caller has them) saves the diff. Returns whether the index changed.
 */
export async function dropNested(
  g: HardenedGit,
  worktree: string,
  base: string,
  tree: string,
  nested: Set<string>,
  changed?: readonly string[],
): Promise<{ dropped: boolean; gitlinksChanged: string[] }> {
  let raw: string[] | undefined;
  const diff = async () => (raw ??= (await g.run(['diff-tree', '-r', '-z', '--raw', '--no-renames', base, tree])).split('\0'));
  const paths = changed ?? (await diff()).filter((_, i) => i % 2 === 1);
  const dirs = repoDirsAbove(worktree, paths);
  if (!dirs.size) return { dropped: false, gitlinksChanged: [] };
  const parts = await diff();
  const moved: string[] = [];
  const drop = new Set<string>();
  for (let i = 0; i + 1 < parts.length; i += 2) {
    // ":<old mode> <new mode> <old oid> <new oid> <status>"
    const [oldMode, newMode] = parts[i]!.replace(/^:/, '').split(' ');
    if (newMode === GITLINK && oldMode === GITLINK) moved.push(parts[i + 1]!);
  }
  for (const d of dirs) {
    if (moved.includes(d)) continue;
    // a directory the base tracks keeps its files (git walks into it); its .git is never recorded
    const inBase = await g.run(['ls-tree', base, '--', literal(d)]);
    if (!/^040000 /.test(inBase) && !inBase.startsWith(`${GITLINK} `)) drop.add(d);
  }
  await leaveOut(g, base, [...drop], nested);
  return { dropped: drop.size > 0, gitlinksChanged: moved };
}

/**
 * Whether any of the paths lies in a directory holding a `.git` (stat calls only): a tree that
 * was clean of nested repositories may not be any more when a directory became one.
 */
export function inNestedRepo(worktree: string, paths: readonly string[]): boolean {
  return repoDirsAbove(worktree, paths).size > 0;
}

/** The outermost directories holding a `.git` at or above each path (the worktree's own top aside). */
function repoDirsAbove(worktree: string, paths: readonly string[]): Set<string> {
  const isRepo = new Map<string, boolean>();
  const found = new Set<string>();
  for (const p of paths) {
    const parts = p.split('/');
    for (let n = 1; n <= parts.length; n += 1) {
      const dir = parts.slice(0, n).join('/');
      let repo = isRepo.get(dir);
      if (repo === undefined) {
        repo = existsSync(join(worktree, dir, '.git'));
        isRepo.set(dir, repo);
      }
      if (repo) {
        found.add(dir);
        break;
      }
    }
  }
  return found;
}

/** One line per finding, for the verdict's summary and the run's events. */
export function nestedRepoNotes(f: NestedFindings): string[] {
  return [
    ...f.nestedRepos.map((p) => `${p} is a git repository of its own: left out of the patch`),
    ...f.gitlinksChanged.map((p) => `${p} is a submodule: the patch moves it to another commit (its content is not verified)`),
  ];
}
