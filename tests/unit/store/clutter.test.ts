/**
 * Tool clutter (bytecode, caches, coverage) stays out of the patch and the changed-file list
 * that the verifier's protected check reads, while real changes next to it stay in.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXCLUDES, excludeList, excludePathspecs } from '../../../src/store/clutter.js';
import { changedFiles, diffAgainstBase } from '../../../src/store/diff.js';
import { git, repoWith } from '../../helpers/repo.js';

function put(root: string, rel: string, content: string | Buffer): void {
  mkdirSync(join(root, rel, '..'), { recursive: true });
  writeFileSync(join(root, rel), content);
}

function pythonRepoAfterTests(): { repo: string; base: string; scratch: string } {
  const repo = repoWith({ 'calc.py': 'def add(a, b):\n    return a - b\n', 'tests/test_calc.py': 'import calc\n' }, 'kiln-clutter-');
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  put(repo, 'calc.py', 'def add(a, b):\n    return a + b\n');
  put(repo, 'tests/__pycache__/test_calc.cpython-311.pyc', Buffer.from([0x6f, 0x0d, 0x0d, 0x0a, 0, 1, 2]));
  put(repo, '__pycache__/calc.cpython-311.pyc', Buffer.from([0x6f, 0x0d, 0x0d, 0x0a, 0, 3]));
  put(repo, 'legacy.pyc', Buffer.from([1, 2, 3]));
  put(repo, '.pytest_cache/v/cache/lastfailed', '{}');
  put(repo, '.coverage', 'sqlite');
  put(repo, 'htmlcov/index.html', '<html>');
  put(repo, 'web/node_modules/.cache/babel/x.json', '{}');
  put(repo, 'notes/pycache_notes.md', 'a real file whose name only looks like clutter\n');
  return { repo, base, scratch: join(repo, '..', 'scratch') };
}

describe('tool clutter in a repo without a .gitignore', () => {
  it('is in neither the patch nor the changed files; real changes are', async () => {
    const { repo, base, scratch } = pythonRepoAfterTests();
    expect(await changedFiles(repo, base, scratch)).toEqual(['calc.py', 'notes/pycache_notes.md']);
    const patch = await diffAgainstBase(repo, base, scratch);
    expect(patch).toMatch(/^diff --git a\/calc.py b\/calc.py$/m);
    expect(patch).not.toMatch(/pycache__|\.pyc|pytest_cache|\.coverage|htmlcov|\.cache|GIT binary patch/);
    // the user's own index is untouched: nothing staged
    expect(git(repo, 'diff', '--cached', '--name-only')).toBe('');
  });

  it('the run record carries the list: a negated default comes back into the patch', async () => {
    const { repo, base, scratch } = pythonRepoAfterTests();
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, 'run.json'), JSON.stringify({ exclude: excludeList(['!htmlcov', 'notes']) }));
    expect(await changedFiles(repo, base, scratch)).toEqual(['calc.py', 'htmlcov/index.html']);
  });

  it('works in a repo whose .gitignore already ignores the same names', async () => {
    const { repo, base, scratch } = pythonRepoAfterTests();
    writeFileSync(join(repo, '.gitignore'), '__pycache__/\n.pytest_cache/\nhtmlcov/\n.coverage\n*.pyc\n.kiln/\n');
    git(repo, 'add', '.gitignore');
    git(repo, 'commit', '-qm', 'ignore');
    expect(await changedFiles(repo, git(repo, 'rev-parse', 'HEAD').trim(), scratch)).toEqual(['calc.py', 'notes/pycache_notes.md']);
    expect(base).toMatch(/^[0-9a-f]{40}$/);
  });

  it('a tracked file under an excluded name keeps its base content in the patch (no deletion)', async () => {
    const repo = repoWith({ 'a.py': 'x = 1\n', '__pycache__/keep.txt': 'committed by the user\n' }, 'kiln-clutter-');
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    put(repo, '__pycache__/keep.txt', 'changed by a tool\n');
    put(repo, 'a.py', 'x = 2\n');
    expect(await changedFiles(repo, base, join(repo, '..', 'scratch'))).toEqual(['a.py']);
  });
});

describe('the exclude list', () => {
  it('adds configured names to the defaults and drops negated ones', () => {
    const list = excludeList(['coverage', '!htmlcov', '!.tox']);
    expect(list).toContain('coverage');
    expect(list).toContain('__pycache__');
    expect(list).not.toContain('htmlcov');
    expect(list).not.toContain('.tox');
    expect(excludeList()).toEqual([...DEFAULT_EXCLUDES]);
  });

  it('every name matches at any depth, as a file or a directory', () => {
    expect(excludePathspecs(['/build'])).toEqual([':(exclude,glob)**/build', ':(exclude,glob)**/build/**']);
    expect(excludePathspecs(['node_modules/.cache/'])).toEqual([':(exclude,glob)**/node_modules/.cache', ':(exclude,glob)**/node_modules/.cache/**']);
  });
});
