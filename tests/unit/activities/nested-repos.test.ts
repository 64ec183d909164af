/**
 * Nested git repositories in the model's worktree: left out of every tree Kiln builds (the look,
 * the checkpoint, the patch, the verified tree) when the base does not track them, a submodule's
 * gitlink kept (moved ones reported), and never a crash. Host git never runs a nested
 * repository's own config: its clean filter would run with the worker's rights.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildVerifyTree, worktreeLook, worktreeTree, type VerifyTree } from '../../../src/activities/verify-tree.js';
import { snapshotWorktree } from '../../../src/activities/snapshot.js';
import { changedFiles, checkpointDiff, diffAgainstBase } from '../../../src/store/diff.js';
import { nestedRepoNotes } from '../../../src/store/nested-repos.js';
import { snapshotWorkingTree } from '../../../src/client/uncommitted.js';
import { currentDiff } from '../../../src/context/diff.js';
import { git, repoWith } from '../../helpers/repo.js';

/** A repo with a source file, and a linked worktree of its base as the run has one. */
function setup(extra: Record<string, string> = {}) {
  const repo = repoWith({ 'src/a.js': 'module.exports = 1;\n', ...extra });
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const wt = join(repo, '..', 'wt');
  git(repo, 'worktree', 'add', '-q', '--detach', wt, base);
  return { repo, base, wt, scratch: join(repo, '..', 'scratch') };
}

/** `git init` at dir (with files, and a commit when asked), as a vendored checkout would be. */
function nestedRepo(dir: string, o: { commit?: boolean } = {}): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'fmt.c'), 'int fmt;\n');
  git(dir, 'init', '-q');
  if (o.commit) {
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'vendored');
  }
}

const filesOf = (repo: string, tree: string) => git(repo, 'ls-tree', '-r', '--name-only', tree).split('\n').filter(Boolean);
const entry = (repo: string, tree: string, path: string) => git(repo, 'ls-tree', tree, '--', path).trim();

let built: VerifyTree | undefined;
afterEach(async () => {
  await built?.remove();
  built = undefined;
});

describe('a nested repository the base does not track', () => {
  for (const [kind, make] of [
    ['with no commit (git init vendor/fmt)', (d: string) => nestedRepo(d)],
    ['with commits', (d: string) => nestedRepo(d, { commit: true })],
    [
      'whose .git is a file pointing at its git directory',
      (d: string) => {
        nestedRepo(d, { commit: true });
        const away = join(d, '..', '..', '..', 'fmt.git');
        execFileSync('mv', [join(d, '.git'), away]);
        writeFileSync(join(d, '.git'), `gitdir: ${away}\n`);
      },
    ],
  ] as const) {
    it(`${kind}: left out of the verified tree and said; the honest fix beside it is judged`, async () => {
      const { repo, base, wt, scratch } = setup();
      writeFileSync(join(wt, 'src/a.js'), 'module.exports = 2;\n');
      make(join(wt, 'vendor/fmt'));
      built = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: scratch, label: 't', protect: null });
      expect(built.changed).toEqual(['src/a.js']);
      expect(built.nestedRepos).toEqual(['vendor/fmt']);
      expect(filesOf(repo, built.tree)).toEqual(['src/a.js']);
      expect(existsSync(join(built.dir, 'vendor'))).toBe(false);
      expect(nestedRepoNotes(built)).toEqual(['vendor/fmt is a git repository of its own: left out of the patch']);
      // the patch, the changed list and the look agree with the verifier
      const patch = await diffAgainstBase(wt, base, scratch);
      expect(patch).toContain('+module.exports = 2;');
      expect(patch).not.toContain('vendor');
      expect(await changedFiles(wt, base, scratch)).toEqual(['src/a.js']);
      expect((await snapshotWorktree(wt, base, join(scratch, 'state'), { changed: true })).tree).toBe(built.modelTree);
      expect((await checkpointDiff(wt, base, scratch)).patch).toBe(patch);
    });
  }

  it('control: a plain directory of new files (no .git) is all in the tree, the patch and the look', async () => {
    const { repo, base, wt, scratch } = setup();
    writeFileSync(join(wt, 'src/a.js'), 'module.exports = 2;\n');
    mkdirSync(join(wt, 'vendor/fmt'), { recursive: true });
    writeFileSync(join(wt, 'vendor/fmt/fmt.c'), 'int fmt;\n');
    built = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: scratch, label: 't', protect: null });
    expect(built.changed.sort()).toEqual(['src/a.js', 'vendor/fmt/fmt.c']);
    expect(built.nestedRepos).toEqual([]);
    expect(readFileSync(join(built.dir, 'vendor/fmt/fmt.c'), 'utf8')).toBe('int fmt;\n');
    expect(await diffAgainstBase(wt, base, scratch)).toContain('+int fmt;');
    expect((await snapshotWorktree(wt, base, join(scratch, 'state'), { changed: true })).changed!.sort()).toEqual(['src/a.js', 'vendor/fmt/fmt.c']);
  });

  it('a directory the base tracks keeps its files when the model runs git init in it: its .git is never recorded', async () => {
    const { repo, base, wt, scratch } = setup({ 'vendor/fmt/fmt.c': 'int fmt;\n' });
    writeFileSync(join(wt, 'vendor/fmt/fmt.c'), 'int fmt = 2;\n');
    git(join(wt, 'vendor/fmt'), 'init', '-q');
    const look = await worktreeLook(wt, base, scratch);
    expect(look.nestedRepos).toEqual([]);
    expect(filesOf(repo, look.tree).sort()).toEqual(['src/a.js', 'vendor/fmt/fmt.c']);
    expect(await diffAgainstBase(wt, base, scratch)).toContain('+int fmt = 2;');
  });

  it('the look kept between commands agrees with a fresh one as files become a repository and back', async () => {
    const { base, wt, scratch } = setup();
    const state = join(scratch, 'state');
    let seen: Awaited<ReturnType<typeof snapshotWorktree>> | undefined;
    const look = async () => (seen = await snapshotWorktree(wt, base, state, { changed: true, ...(seen ? { seen } : {}) })).changed!.slice().sort();
    mkdirSync(join(wt, 'vendor/fmt'), { recursive: true });
    writeFileSync(join(wt, 'vendor/fmt/fmt.c'), 'int fmt;\n');
    // an old mtime: git trusts the stat, so `git init` alone leaves the kept index byte for byte
    // as it was (the look's memo of that index, and the look before's tree, are then the same)
    execFileSync('touch', ['-d', '2001-01-01', join(wt, 'vendor/fmt/fmt.c')]);
    expect(await look()).toEqual(['vendor/fmt/fmt.c']);
    expect(await look()).toEqual(['vendor/fmt/fmt.c']);
    // the kept index holds vendor/fmt/fmt.c: git alone would go on walking into the repository
    git(join(wt, 'vendor/fmt'), 'init', '-q');
    expect(await look()).toEqual([]);
    expect((await snapshotWorktree(wt, base, state)).tree).toBe(await worktreeTree(wt, base, scratch));
    git(join(wt, 'vendor/fmt'), 'add', '-A');
    git(join(wt, 'vendor/fmt'), 'commit', '-q', '-m', 'v');
    expect(await look()).toEqual([]);
    expect((await snapshotWorktree(wt, base, state)).tree).toBe(await worktreeTree(wt, base, scratch));
    rmSync(join(wt, 'vendor/fmt/.git'), { recursive: true, force: true });
    expect(await look()).toEqual(['vendor/fmt/fmt.c']);
  });

  it('`--include-uncommitted` in a checkout holding one: the base commit leaves it out, the rest is in', async () => {
    const repo = repoWith({ 'a.txt': 'a\n' });
    writeFileSync(join(repo, 'b.txt'), 'b\n');
    nestedRepo(join(repo, 'vendor/fmt'));
    const commit = await snapshotWorkingTree(repo, 'run-1');
    expect(filesOf(repo, commit).sort()).toEqual(['a.txt', 'b.txt']);
  });
});

describe('a submodule the base tracks (a gitlink)', () => {
  function withSubmodule() {
    const sub = repoWith({ 's.c': 'one\n' }, 'kiln-sub-');
    const first = git(sub, 'rev-parse', 'HEAD').trim();
    writeFileSync(join(sub, 's.c'), 'two\n');
    git(sub, 'commit', '-q', '-am', 'two');
    const second = git(sub, 'rev-parse', 'HEAD').trim();
    const repo = repoWith({ 'src/a.js': 'module.exports = 1;\n' });
    git(repo, 'update-index', '--add', '--cacheinfo', `160000,${first},vendor/sub`);
    git(repo, 'commit', '-q', '-m', 'submodule');
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const wt = join(repo, '..', 'wt');
    git(repo, 'worktree', 'add', '-q', '--detach', wt, base);
    return { repo, base, wt, sub, first, second, scratch: join(repo, '..', 'scratch') };
  }

  it('not checked out (an empty directory in the worktree): the base gitlink stays, nothing changed', async () => {
    const { repo, base, wt, first, scratch } = withSubmodule();
    writeFileSync(join(wt, 'src/a.js'), 'module.exports = 2;\n');
    built = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: scratch, label: 't', protect: null });
    expect(built.changed).toEqual(['src/a.js']);
    expect(entry(repo, built.tree, 'vendor/sub')).toBe(`160000 commit ${first}\tvendor/sub`);
    expect(built.gitlinksChanged).toEqual([]);
  });

  it('checked out at another commit: the gitlink moves, reported; with no commit checked out: the base one stays', async () => {
    const { repo, base, wt, sub, second, first, scratch } = withSubmodule();
    rmSync(join(wt, 'vendor/sub'), { recursive: true });
    git(repo, 'clone', '-q', sub, join(wt, 'vendor/sub'));
    built = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: scratch, label: 't', protect: null });
    expect(built.changed).toEqual(['vendor/sub']);
    expect(entry(repo, built.tree, 'vendor/sub')).toBe(`160000 commit ${second}\tvendor/sub`);
    expect(built.gitlinksChanged).toEqual(['vendor/sub']);
    expect(nestedRepoNotes(built)).toEqual(['vendor/sub is a submodule: the patch moves it to another commit (its content is not verified)']);
    expect(await diffAgainstBase(wt, base, scratch)).toContain(`+Subproject commit ${second}`);
    await built.remove();
    built = undefined;

    rmSync(join(wt, 'vendor/sub'), { recursive: true });
    nestedRepo(join(wt, 'vendor/sub'));
    const look = await worktreeLook(wt, base, scratch);
    expect(entry(repo, look.tree, 'vendor/sub')).toBe(`160000 commit ${first}\tvendor/sub`);
    expect((await snapshotWorktree(wt, base, join(scratch, 'state'), { changed: true })).changed).toEqual([]);
  });
});

describe("host git never runs a nested repository's config", () => {
  /** A nested repository whose clean filter leaves a marker, with a file git must re-hash. */
  function trapped(dir: string, marker: string) {
    mkdirSync(dir, { recursive: true });
    git(dir, 'init', '-q');
    writeFileSync(join(dir, '.gitattributes'), '* filter=trap\n');
    writeFileSync(join(dir, 's.c'), 'one\n');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'x');
    git(dir, 'config', 'filter.trap.clean', `sh -c 'echo ran >> ${marker}; cat'`);
    // same size, new mtime: git cannot tell from the stat and must run the filter to hash it
    writeFileSync(join(dir, 's.c'), 'two\n');
    execFileSync('touch', ['-d', '2001-01-01', join(dir, 's.c')]);
  }

  it('control: git status inside it runs the filter', () => {
    const { wt } = setup();
    const marker = join(wt, '..', 'ran');
    trapped(join(wt, 'vendor/fmt'), marker);
    git(join(wt, 'vendor/fmt'), 'status', '--porcelain');
    expect(existsSync(marker)).toBe(true);
  });

  it('at a submodule path and at a new path: looks, the checkpoint, the patch, the verified tree and the context diff run none of it', async () => {
    const sub = repoWith({ 's.c': 'one\n' }, 'kiln-sub-');
    const repo = repoWith({ 'src/a.js': 'module.exports = 1;\n' });
    git(repo, 'update-index', '--add', '--cacheinfo', `160000,${git(sub, 'rev-parse', 'HEAD').trim()},vendor/sub`);
    git(repo, 'commit', '-q', '-m', 'submodule');
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const wt = join(repo, '..', 'wt');
    git(repo, 'worktree', 'add', '-q', '--detach', wt, base);
    const scratch = join(repo, '..', 'scratch');
    const marker = join(repo, '..', 'ran');
    rmSync(join(wt, 'vendor/sub'), { recursive: true });
    trapped(join(wt, 'vendor/sub'), marker);
    trapped(join(wt, 'vendor/fmt'), marker);
    writeFileSync(join(wt, 'src/a.js'), 'module.exports = 2;\n');
    for (let i = 0; i < 3; i += 1) {
      await snapshotWorktree(wt, base, join(scratch, 'state'), { changed: true });
      await checkpointDiff(wt, base, scratch);
      execFileSync('touch', ['-d', `200${i + 2}-01-01`, join(wt, 'vendor/sub/s.c'), join(wt, 'vendor/fmt/s.c')]);
    }
    await diffAgainstBase(wt, base, scratch);
    await changedFiles(wt, base, scratch);
    built = await buildVerifyTree({ repo, worktree: wt, base, scratchDir: scratch, label: 't', protect: null });
    expect(built.nestedRepos).toEqual(['vendor/fmt']);
    expect(built.gitlinksChanged).toEqual(['vendor/sub']);
    await currentDiff(wt);
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
  });
});
