/** Uncommitted work in the user's checkout: seen, named, and carried into a base commit on request. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseForRun, baseRef, uncommittedWork } from '../../../src/client/uncommitted.js';
import { shellQuote } from '../../../src/sandbox/shell-quote.js';
import { git, repoWith } from '../../helpers/repo.js';

function dirtyRepo(): string {
  const repo = repoWith({ 'app.py': 'x = 1\n', README: 'hi\n' }, 'kiln-dirty repo ');
  writeFileSync(join(repo, 'app.py'), 'x = 2\n');
  writeFileSync(join(repo, 'notes.txt'), 'untracked\n');
  mkdirSync(join(repo, '__pycache__'));
  writeFileSync(join(repo, '__pycache__', 'app.cpython-311.pyc'), 'bytecode');
  mkdirSync(join(repo, '.kiln'));
  writeFileSync(join(repo, '.kiln', 'config'), '{}');
  return repo;
}

describe('uncommitted work', () => {
  it('names the modified and the untracked files, not Kiln state or tool clutter', async () => {
    expect(await uncommittedWork(dirtyRepo())).toEqual({ modified: ['app.py'], untracked: ['notes.txt'] });
    expect(await uncommittedWork(repoWith({ a: '1' }))).toEqual({ modified: [], untracked: [] });
  });

  it('without --include-uncommitted: a warning naming them, the path quoted; the base stays', async () => {
    const repo = dirtyRepo();
    const r = await baseForRun({ repo, runId: 'r1' }, false, [], shellQuote);
    expect(r.base).toBeUndefined();
    expect(r.warning).toBe(
      `warning: 2 uncommitted changes in ${shellQuote(repo)} will not be in the run (modified: app.py; untracked: notes.txt); it starts from the last commit. Commit them, or pass --include-uncommitted to start from the working tree as it is`,
    );
    expect(r.warning).toContain(`'${repo}'`);
  });

  it('with --include-uncommitted: the base is HEAD plus the working tree, pinned; the checkout is untouched', async () => {
    const repo = dirtyRepo();
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const r = await baseForRun({ repo, runId: 'r2' }, true, [], shellQuote);
    expect(r.base).toMatch(/^[0-9a-f]{40}$/);
    expect(r.note).toContain('including 2 uncommitted changes');
    expect(git(repo, 'rev-parse', `${r.base}^`).trim()).toBe(head);
    expect(git(repo, 'show', `${r.base}:app.py`)).toBe('x = 2\n');
    expect(git(repo, 'show', `${r.base}:notes.txt`)).toBe('untracked\n');
    expect(git(repo, 'ls-tree', '-r', '--name-only', r.base!).split('\n').filter(Boolean).sort()).toEqual(['README', 'app.py', 'notes.txt']);
    expect(git(repo, 'rev-parse', baseRef('r2')).trim()).toBe(r.base);
    // the user's branch, index and files are as they were
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(repo, 'status', '--porcelain', '--untracked-files=all', '--', '.', ':(exclude).kiln', ':(exclude)__pycache__')).toBe(
      ' M app.py\n?? notes.txt\n',
    );

    // attaching again with the same id keeps the base the run started from
    writeFileSync(join(repo, 'app.py'), 'x = 3\n');
    expect((await baseForRun({ repo, runId: 'r2' }, true, [], shellQuote)).base).toBe(r.base);
  });

  it('a .gitignore that ignores .kiln and the clutter changes nothing', async () => {
    const repo = dirtyRepo();
    writeFileSync(join(repo, '.git', 'info', 'exclude'), '.kiln/\n__pycache__/\n');
    expect(await uncommittedWork(repo)).toEqual({ modified: ['app.py'], untracked: ['notes.txt'] });
    const r = await baseForRun({ repo, runId: 'r4' }, true, [], shellQuote);
    expect(git(repo, 'ls-tree', '-r', '--name-only', r.base!).split('\n').filter(Boolean).sort()).toEqual(['README', 'app.py', 'notes.txt']);
  });

  it('with --include-uncommitted on a clean checkout: HEAD, and says so', async () => {
    const r = await baseForRun({ repo: repoWith({ a: '1' }), runId: 'r3' }, true, [], shellQuote);
    expect(r.base).toBeUndefined();
    expect(r.note).toMatch(/no uncommitted changes/);
  });
});
