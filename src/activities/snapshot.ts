/**
 * What a command changed in the worktree: the worktree as a git tree before and after, through an
 * index of the run's own (kept between commands, so git re-hashes only what changed). Ignored
 * files are not changes: they never reach the patch or the verified tree either.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { mkdir, open, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { hardenedGit } from '../git/run.js';
import { dropClutter, runExcludeList } from '../store/clutter.js';
import { baseGitlinks, dropNested, inNestedRepo, stageWorktree } from '../store/nested-repos.js';
import { readRunText } from '../store/sync-io.js';
import { treeChanges } from './verify-tree.js';

/** The worktree as a tree, with the paths it changes against the base when they were asked for. */
export interface Look {
  tree: string;
  changed?: string[];
}

/** At most this many paths go back to the workflow (history); the count says how many there were. */
export const MAX_CHANGED_PATHS = 50;

/** The looks' own index, kept in the run's state dir between commands. */
const lookIndex = (stateDir: string) => join(stateDir, 'snapshot.index');

/**
 * The worktree as a tree through the run's kept index and, when asked, the paths it changes
 * against the base (what the policy needs to judge a command): one git set-up for both, and no
 * fresh index that would re-hash every file of the repo.
 */
export function snapshotWorktree(worktree: string, base: string, stateDir: string, o: { changed?: boolean; seen?: Look } = {}): Promise<Look> {
  // one look at a time on an index (git locks it): a look after an edit may still be going
  const index = lookIndex(stateDir);
  const look = (looking.get(index) ?? Promise.resolve()).then(() => lookThrough(index, worktree, base, stateDir, o));
  const settled = look.then(
    () => undefined,
    () => undefined,
  );
  looking.set(index, settled);
  void settled.then(() => {
    if (looking.get(index) === settled) looking.delete(index);
  });
  return look;
}

/** index → the nested repositories its looks have found (this process's; another finds them again) */
const nestedRepos = new Map<string, Set<string>>();
const MAX_NESTED = 256;

function nestedIn(index: string): Set<string> {
  let found = nestedRepos.get(index);
  if (!found) {
    if (nestedRepos.size >= MAX_NESTED) nestedRepos.clear();
    found = new Set();
    nestedRepos.set(index, found);
  }
  return found;
}

/** index → the last look queued on it (this process's) */
const looking = new Map<string, Promise<void>>();

async function lookThrough(index: string, worktree: string, base: string, stateDir: string, o: { changed?: boolean; seen?: Look }): Promise<Look> {
  await mkdir(dirname(index), { recursive: true });
  const g = await hardenedGit(worktree, { indexFile: index });
  // the base's gitlinks (once per base) beside the read-tree: the first look is waited for
  if (!existsSync(index)) await Promise.all([g.run(['read-tree', base]), baseGitlinks(g, base)]);
  const nested = nestedIn(index);
  // everything, clutter too: exclude pathspecs cost ~4x the add on a big repo; the clutter is taken
  // back out below, and a look whose index is the last one's needs neither (the memo)
  await stageWorktree(g, worktree, base, nested);
  // an index whose content is the one the last look saw makes the same tree: most commands
  // change nothing, and then `add -A` leaves the index as it was (one git process fewer a look)
  const sum = await indexChecksum(index, oidBytes(base));
  const memo = trees.get(index);
  // (unless a directory it changes became a repository since: `git init` changes no index entry)
  if (sum && memo?.sum === sum) {
    const hit = await withChanged(g, base, memo.tree, o);
    if (!inNestedRepo(worktree, hit.changed ?? [])) return hit;
  }
  let tree = (await g.run(['write-tree'])).trim();
  let look: Look = { tree };
  // the look before's tree has no clutter: the same tree has none either (nor nested
  // repositories, unless a directory it changes became one)
  if (o.seen?.tree !== tree || inNestedRepo(worktree, o.seen.changed ?? [])) {
    look = o.changed ? await withChanged(g, base, tree, { changed: true }) : look;
    const { dropped } = await dropNested(g, worktree, base, tree, nested, look.changed);
    if ((await dropClutter(g.run, base, tree, await runExcludeList(stateDir), look.changed)) || dropped) {
      tree = (await g.run(['write-tree'])).trim();
      look = o.changed ? await withChanged(g, base, tree, { changed: true }) : { tree };
      // the memo is of the index the next `add -A` leaves: with the clutter in it again (the
      // nested repositories found stay out of it: the add leaves them out from now on)
      await stageWorktree(g, worktree, base, nested);
    }
  }
  // write-tree may rewrite the index (its cache of trees): the memo is of the index as left
  const after = await indexChecksum(index, oidBytes(base));
  trees.delete(index);
  if (after) trees.set(index, { sum: after, tree });
  if (trees.size > MAX_TREES) trees.delete(trees.keys().next().value!);
  return look.changed || !o.changed ? look : withChanged(g, base, tree, o);
}

/** The tree with the paths it changes against the base, when they were asked for. */
async function withChanged(
  g: { run(args: readonly string[]): Promise<string> },
  base: string,
  tree: string,
  o: { changed?: boolean; seen?: Look },
): Promise<Look> {
  if (!o.changed) return { tree };
  // most commands change nothing (a test run, a grep): the paths are the look before's
  if (o.seen?.changed && o.seen.tree === tree) return { tree, changed: o.seen.changed };
  const names = await g.run(['diff-tree', '-r', '-z', '--name-only', '--no-renames', base, tree]);
  return { tree, changed: names.split('\0').filter(Boolean) };
}

/** index file → the checksum of the content a write-tree last turned into `tree` (this process's) */
const trees = new Map<string, { sum: string; tree: string }>();
const MAX_TREES = 256;

/** The object id length in bytes, from a full commit id (SHA-1 or SHA-256); none for anything else. */
const oidBytes = (commit: string) => (/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(commit) ? commit.length / 2 : undefined);

/**
 * The trailing checksum git writes over an index's whole content (SHA-1 or SHA-256, the length of
 * the repository's object ids): the same checksum is the same entries, so the same tree. None
 * when the file is missing or git wrote no checksum (index.skipHash leaves zeros).
 */
async function indexChecksum(index: string, bytes: number | undefined): Promise<string | undefined> {
  if (!bytes) return undefined;
  let fh;
  try {
    fh = await open(index, 'r');
    const { size } = await fh.stat();
    if (size < bytes) return undefined;
    const buf = Buffer.alloc(bytes);
    await fh.read(buf, 0, bytes, size - bytes);
    return buf.some((b) => b !== 0) ? buf.toString('hex') : undefined;
  } catch {
    return undefined;
  } finally {
    await fh?.close();
  }
}

/**
 * The worktree's tree as the last command left it. Only commands and the edit tools change a
 * worktree once it is prepared; an edit forgets this first, so while it is here the worktree is
 * that tree and the next checkpoint needs no git at all.
 */
const SEEN_FILE = 'worktree-tree';

/** The paths that tree changes against the base, kept with it: a pure function of the two. */
const SEEN_CHANGED_FILE = 'worktree-changed.json';

/**
 * The run's first look at its worktree, started once prepare has set the worktree up and waited
 * for by the first model turn (agent.ts): a new look index hashes every file, ~450 ms on a
 * 50,000-file repo, which the first command would otherwise wait for before it runs, and ~20 ms
 * on a small one, which a fast first reply would. Nothing changes the worktree between prepare
 * and the first turn's calls, so the command after it finds this look as the one the last
 * command left.
 */
export function firstLook(worktree: string, base: string, stateDir: string): Promise<void> {
  // prepare starts it and the first turn waits for it: one look, not two on one index
  const going = firstLooks.get(stateDir);
  if (going) return going;
  if (existsSync(lookIndex(stateDir))) return Promise.resolve();
  const look = (async () => {
    await forgetWorktreeTree(stateDir);
    const seen = await snapshotWorktree(worktree, base, stateDir, { changed: true });
    // a command another worker process ran meanwhile left its own look: that one stays
    await rememberWorktreeTree(stateDir, seen.tree, seen.changed, { unlessSeen: true });
  })().finally(() => firstLooks.delete(stateDir));
  firstLooks.set(stateDir, look);
  return look;
}

/** state dir → its first look while it is being taken (this process's) */
const firstLooks = new Map<string, Promise<void>>();

/** The paths file's content: the tree it is of, with its paths. */
const seenChanged = (tree: string, changed: string[]) => JSON.stringify({ tree, changed });

/**
 * `unlessSeen`: only where no look is remembered (a later one must not be replaced by an older
 * one); the paths file then names another tree, which knownSnapshot takes for none.
 */
export async function rememberWorktreeTree(stateDir: string, tree: string, changed?: string[], o: { unlessSeen?: boolean } = {}): Promise<void> {
  if (changed) await writeFile(join(stateDir, SEEN_CHANGED_FILE), seenChanged(tree, changed));
  await writeFile(join(stateDir, SEEN_FILE), tree, { flag: o.unlessSeen ? 'wx' : 'w' }).catch((err: NodeJS.ErrnoException) => {
    if (!(o.unlessSeen && err.code === 'EEXIST')) throw err;
  });
}

/**
 * The look the last command left, while nothing has changed the worktree since: the next
 * command's "before" with no git at all (four git processes a command, most of a quick turn).
 */
export async function knownSnapshot(stateDir: string): Promise<{ tree: string; changed: string[] } | undefined> {
  // both at once; the memo counts only for the tree it names
  const [tree, memoText] = await Promise.all([knownWorktreeTree(stateDir), readRunText(join(stateDir, SEEN_CHANGED_FILE)).catch(() => 'null')]);
  if (!tree) return undefined;
  const memo = JSON.parse(memoText) as { tree?: unknown; changed?: unknown } | null;
  return memo?.tree === tree && Array.isArray(memo.changed) && memo.changed.every((p) => typeof p === 'string')
    ? { tree, changed: memo.changed as string[] }
    : undefined;
}

/**
 * The paths the worktree changes against the base at most, kept across the edit tools' writes
 * while no look is (an edit knows the one path it writes): a reader run next is judged on them
 * with no git at all. A superset is only stricter for the policy (a file the run wrote asks when
 * run), never looser; a command that may write removes it with the look (forgetWorktreeTree).
 */
const EDITED_FILE = 'worktree-changed-at-most.json';

/** state dir → how many times the worktree was said to change outside a look (this process's) */
const generations = new Map<string, number>();

/** Before the worktree may change outside a look (a command that may write, setup): no look, and no paths kept. */
export async function forgetWorktreeTree(stateDir: string): Promise<void> {
  // at once, before any await: a look after an edit still going must not be remembered now
  generations.set(stateDir, (generations.get(stateDir) ?? 0) + 1);
  await rm(join(stateDir, SEEN_FILE), { force: true });
  await rm(join(stateDir, EDITED_FILE), { force: true });
}

/**
 * Before the edit tool writes `path`: the look is forgotten (the tree is no longer the
 * worktree's), and what it changed, with `path`, is kept as the paths changed at most. Without a
 * look or kept paths to start from, nothing is kept, and the next command waits for a look.
 */
export async function forgetWorktreeTreeForEdit(stateDir: string, path: string): Promise<void> {
  const from = (await knownSnapshot(stateDir))?.changed ?? (await changedAtMost(stateDir));
  await forgetWorktreeTree(stateDir);
  if (from) await writeFile(join(stateDir, EDITED_FILE), JSON.stringify({ changed: [...new Set([...from, path])].sort() }));
}

/** The paths kept by forgetWorktreeTreeForEdit, while nothing but the edit tools wrote since the last look. */
export async function changedAtMost(stateDir: string): Promise<string[] | undefined> {
  let kept: { changed?: unknown } | null;
  try {
    kept = JSON.parse(await readRunText(join(stateDir, EDITED_FILE))) as { changed?: unknown } | null;
  } catch {
    // none, or half a write (a crash): the next command looks
    return undefined;
  }
  return Array.isArray(kept?.changed) && kept.changed.every((p) => typeof p === 'string') ? (kept.changed as string[]) : undefined;
}

/**
 * After an edit wrote: the look the next command or checkpoint needs starts at once, beside
 * whatever comes next (a reader needs none: it is judged on the paths changed at most). It is
 * remembered only if nothing was said to change the worktree since it started; the check and the
 * write are one synchronous step, so a forget cannot fall between them.
 */
export function lookAfterEdit(worktree: string, base: string, stateDir: string): void {
  const generation = generations.get(stateDir) ?? 0;
  const look = snapshotWorktree(worktree, base, stateDir, { changed: true })
    .then((seen) => {
      if ((generations.get(stateDir) ?? 0) !== generation) return;
      // rememberWorktreeTree's files, written without a turn of the event loop in between
      if (seen.changed) writeFileSync(join(stateDir, SEEN_CHANGED_FILE), seenChanged(seen.tree, seen.changed));
      writeFileSync(join(stateDir, SEEN_FILE), seen.tree);
    })
    // a failed one is left to whoever needs a look next
    .catch(() => undefined)
    .finally(() => {
      if (lookingAfterEdit.get(stateDir) === look) lookingAfterEdit.delete(stateDir);
    });
  lookingAfterEdit.set(stateDir, look);
}

/** state dir → its look after an edit while it is going (this process's) */
const lookingAfterEdit = new Map<string, Promise<void>>();

/** Waits for the look after an edit, if one is going: whoever needs the worktree's tree waits for it, not for a look of its own. */
export async function lookAfterEditDone(stateDir: string): Promise<void> {
  await lookingAfterEdit.get(stateDir);
}

export async function knownWorktreeTree(stateDir: string): Promise<string | undefined> {
  const tree = (await readRunText(join(stateDir, SEEN_FILE)).catch(() => '')).trim();
  // half a write (a crash) is no tree: the checkpoint then looks for itself
  return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(tree) ? tree : undefined;
}

export async function pathsChangedBetween(worktree: string, before: string, after: string): Promise<string[]> {
  if (before === after) return [];
  return (await treeChanges(worktree, before, after)).map((c) => c.path);
}
