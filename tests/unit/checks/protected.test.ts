/** The protected set covers every ecosystem's tests, runner configs, check definitions and CI. */
import { describe, expect, it } from 'vitest';
import { changedIniSections, changedJsonKeys, protectedSet, restoreJsonKeys, protectedMounts } from '../../../src/checks/protected.js';

describe('protectedSet', () => {
  const p = protectedSet([], ['npm test', 'make check', './scripts/ci.sh']);

  it.each([
    'ring_test.go',
    'pkg/ring/testdata/golden.txt',
    'test_merge.py',
    'pkg/merge_test.py',
    'conftest.py',
    'tests/unit/test_a.py',
    'test.js',
    'src/a.test.ts',
    'crates/x/tests/it.rs',
    'benches/b.rs',
    'src/test/java/AppTest.java',
    'spec/models/user_spec.rb',
    'vitest.config.ts',
    'jest.config.js',
    '.mocharc.yml',
    'pytest.ini',
    'tox.ini',
    'go.work',
    'Makefile',
    'scripts/ci.sh',
    '.github/workflows/ci.yml',
  ])('protects %s', (f) => expect(p.isProtected(f)).toBe(true));

  it.each(['src/ring.js', 'merge.py', 'ring.go', 'src/main/java/App.java', 'lib/testing_utils.rb', 'contest.py', 'README.md', 'package.json'])(
    'leaves %s to the model (control)',
    (f) => expect(p.isProtected(f)).toBe(false),
  );

  it('protects a Makefile only when a check calls make', () => {
    expect(protectedSet([], ['npm test']).isProtected('Makefile')).toBe(false);
  });

  it('adds the repo’s (or an eval task’s) own globs', () => {
    expect(protectedSet(['fixtures/**'], []).isProtected('fixtures/a.json')).toBe(true);
  });
});

describe('unprotect: files released by name', () => {
  it('releases the named file and its sections, not its neighbours, never .kiln or a pinned glob', () => {
    const p = protectedSet([], ['npm test'], { unprotect: ['tests/fixtures/golden.json', 'package.json', '.kiln/policy.json'], pinned: ['tests/pinned.json'] });
    expect(p.isProtected('tests/fixtures/golden.json')).toBe(false);
    expect(p.isProtected('tests/fixtures/other.json')).toBe(true);
    expect(p.sectionsProtected('package.json')).toBe(false);
    expect(p.sectionsProtected('pyproject.toml')).toBe(true);
    expect(p.isProtected('.kiln/policy.json')).toBe(true);
    const pinned = protectedSet([], [], { unprotect: ['tests/pinned.json'], pinned: ['tests/pinned.json'] });
    expect(pinned.isProtected('tests/pinned.json')).toBe(true);
  });
});

describe('protected sections', () => {
  const base = JSON.stringify({ name: 'x', scripts: { test: 'node --test' }, dependencies: { a: '1' } });

  it('flags a changed test script and an added postinstall, not a dependency change', () => {
    expect(changedJsonKeys(base, JSON.stringify({ name: 'x', scripts: { test: 'node --test || true' }, dependencies: { a: '1' } }), ['scripts'])).toEqual([
      'scripts',
    ]);
    expect(
      changedJsonKeys(base, JSON.stringify({ name: 'x', scripts: { test: 'node --test', postinstall: 'curl x|sh' }, dependencies: { a: '1' } }), ['scripts']),
    ).toEqual(['scripts']);
    expect(changedJsonKeys(base, JSON.stringify({ name: 'x', scripts: { test: 'node --test' }, dependencies: { a: '2' } }), ['scripts'])).toEqual([]);
  });

  it('puts the base’s scripts back and keeps the model’s dependencies', () => {
    const restored = JSON.parse(restoreJsonKeys(base, JSON.stringify({ name: 'x', scripts: { test: 'true' }, dependencies: { a: '2' } }), ['scripts']));
    expect(restored).toEqual({ name: 'x', scripts: { test: 'node --test' }, dependencies: { a: '2' } });
  });

  it('flags a pytest section of pyproject.toml, not the project metadata', () => {
    const before = '[project]\nname = "m"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n';
    expect(changedIniSections(before, before.replace('-q"', "-q -k 'not slow'\""), /^tool\.pytest/)).toEqual(['tool.pytest.ini_options']);
    expect(changedIniSections(before, before.replace('name = "m"', 'name = "n"'), /^tool\.pytest/)).toEqual([]);
  });
});

describe('protectedMounts: what the kernel holds read-only in a worktree', () => {
  it('each protected file is its own mount (a test run may still write beside it); product code is never held', () => {
    const set = protectedSet([], ['npm test', 'make check']);
    const files = [
      'src/ring.js',
      'src/ring.test.js',
      'test/a.js',
      'test/fixtures/x.json',
      '.github/workflows/ci.yml',
      'Makefile',
      'package.json',
      'lib/util.py',
      'tests/test_util.py',
    ];
    expect(protectedMounts(set, files)).toEqual([
      '.git',
      '.github/workflows/ci.yml',
      '.kiln',
      'Makefile',
      'src/ring.test.js',
      'test/a.js',
      'test/fixtures/x.json',
      'tests/test_util.py',
    ]);
  });

  it('a repository with thousands of protected files holds whole protected folders instead', () => {
    const set = protectedSet([], ['npm test']);
    const files = [...Array.from({ length: 2500 }, (_, i) => `test/t${i}.test.js`), 'src/a.test.js', 'src/a.js'];
    expect(protectedMounts(set, files)).toEqual(['.git', '.kiln', 'src/a.test.js', 'test']);
  });
});
