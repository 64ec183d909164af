/**
 * The git repository a sandboxed command sees in place of the real one: the same commits, trees
 * and refs, and every blob except those that sat at a sensitive path at any commit the repository
 * can reach. A secret deleted from HEAD but kept in history is then not readable inside the
 * sandbox at all — `git log -p`, `git show OLD:.env` or the object store read by hand fail on a
 * missing object instead of printing it — whatever encoding a command would compute from it.
 * Redaction stays the second line.
 *
 * One view per repository state (refs and the sensitive rules), shared by the runs that see it,
 * bound read-only: HEAD is the run's base, the index the base's tree (git status shows the run's
 * changes against the base, as in the real worktree).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isSensitivePath } from '../policy/globs.js';
import type { PolicyConfig } from '../policy/types.js';
import { git } from '../git/run.js';
import { kilnCacheHome } from '../checks/caches.js';

export interface GitView {
  /** the view's git directory */
  dir: string;
  /** a `.git` file pointing at it, for a linked worktree's `.git` */
  gitFile: string;
}

const building = new Map<string, Promise<GitView>>();

/** Where views live: beside the check caches, outside every repository. */
export function gitViewRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnCacheHome(env), 'git-views');
}

/**
 * The run's view for its sensitive rules; undefined when it cannot be built, and then commands
 * get no git directory at all (git fails inside) rather than the real one.
 */
export async function runGitView(
  repo: string,
  base: string,
  config: Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitView | 'none'> {
  try {
    return await gitView(repo, base, (p) => isSensitivePath(p, config), JSON.stringify([config.sensitive, config.allowSensitive]), gitViewRoot(env));
  } catch {
    return 'none';
  }
}

/** The view of `repo` at `base`, built once per repository state. */
export function gitView(repo: string, base: string, isSensitive: (path: string) => boolean, rulesKey: string, root: string): Promise<GitView> {
  const key = `${repo}\0${base}\0${rulesKey}\0${root}`;
  let p = building.get(key);
  if (!p) {
    p = build(repo, base, isSensitive, rulesKey, root).finally(() => building.delete(key));
    building.set(key, p);
  }
  return p;
}

/** A view no run has used for a day goes (a run's view is touched each time a run takes it). */
const UNUSED_MS = 24 * 3600_000;

async function pruneOld(repoDir: string): Promise<void> {
  const names = await readdir(repoDir).catch(() => [] as string[]);
  for (const name of names) {
    const at = await stat(join(repoDir, name, 'kiln-view-ready')).catch(() => undefined);
    if (at && Date.now() - at.mtimeMs > UNUSED_MS) await rm(join(repoDir, name), { recursive: true, force: true });
  }
}

async function build(repo: string, base: string, isSensitive: (path: string) => boolean, rulesKey: string, root: string): Promise<GitView> {
  const refs = await git(repo, ['for-each-ref', '--format=%(objectname) %(refname)']);
  const id = createHash('sha256').update([repo, base, rulesKey, refs].join('\0')).digest('hex').slice(0, 24);
  const repoDir = join(root, createHash('sha256').update(repo).digest('hex').slice(0, 16));
  const dir = join(repoDir, id);
  const view = { dir, gitFile: join(dir, 'gitfile') };
  const ready = join(dir, 'kiln-view-ready');
  if (existsSync(ready)) {
    const now = new Date();
    await utimes(ready, now, now).catch(() => undefined);
    return view;
  }
  await pruneOld(repoDir);

  const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(join(tmp, 'objects', 'pack'), { recursive: true });
    await mkdir(join(tmp, 'refs'), { recursive: true });
    // every object reachable from a ref or the base, each with the first path it was seen at
    const listed = await git(repo, ['rev-list', '--objects', '--all', base]);
    const keep: string[] = [];
    const dropped = new Set<string>();
    for (const line of listed.split('\n')) {
      if (!line) continue;
      const sp = line.indexOf(' ');
      const oid = sp < 0 ? line : line.slice(0, sp);
      const path = sp < 0 ? '' : line.slice(sp + 1);
      if (path && isSensitive(path)) dropped.add(oid);
      else keep.push(oid);
    }
    await git(repo, ['pack-objects', '-q', join(tmp, 'objects', 'pack', 'pack')], { input: `${keep.filter((o) => !dropped.has(o)).join('\n')}\n` });
    // refs as they are (packed-refs needs no object to be present at write time), HEAD detached at the base
    const packed = refs
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim());
    await writeFile(join(tmp, 'packed-refs'), `# pack-refs with: peeled\n${packed.join('\n')}\n`);
    await writeFile(join(tmp, 'HEAD'), `${base}\n`);
    // a shallow clone's history ends where the repository's does
    const common = resolve(repo, await git(repo, ['rev-parse', '--git-common-dir']).then((s) => s.trim()));
    if (existsSync(join(common, 'shallow'))) await copyFile(join(common, 'shallow'), join(tmp, 'shallow'));
    // no remote, no hooks, nothing that runs: the view is for reading
    await writeFile(join(tmp, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfilemode = true\n');
    await writeFile(join(tmp, 'gitfile'), `gitdir: ${dir}\n`);
    await git(tmp, ['read-tree', base], { indexFile: join(tmp, 'index') });
    await writeFile(join(tmp, 'kiln-view-ready'), `${new Date().toISOString()}\n`);
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return view;
}
