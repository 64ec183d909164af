/**
 * How a patch's files are classed from what the checks did with them, on tracer logs written the
 * way strace writes them: each rule with the cheat only it catches, beside the honest change
 * that looks like it and must stay product code.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  classifyChanges,
  counterfactualNeeded,
  loadTrace,
  mergeTraces,
  productPaths,
  rewrittenByChecks,
  storeTrace,
  type Change,
} from '../../../src/checks/influence.js';
import { readTrace, type CheckTrace } from '../../../src/checks/trace.js';
import { failedOnBase, passedWithoutProduct } from '../../../src/checks/counterfactual.js';
import type { BaselineCheck, CheckJudgement } from '../../../src/checks/judge.js';

const ROOT = '/w/checkout';
const isTest = (p: string) => /(^|\/)test[^/]*\.(js|py)$|_test\.go$/.test(p);

/** A log as strace -f writes it: `pid call(args) = ret`. */
async function trace(lines: string[]): Promise<CheckTrace> {
  const file = join(mkdtempSync(join(tmpdir(), 'kiln-trace-')), 'log');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return readTrace(file, ROOT, isTest);
}

const npmThenNode = (extra: string[] = [], nodeBin = '/usr/bin/node') => [
  `10 execve("/usr/bin/npm", ["npm", "test"], 0x0 /* 3 vars */) = 0`,
  `10 openat(AT_FDCWD, "${ROOT}/package.json", O_RDONLY|O_CLOEXEC) = 18`,
  `10 openat(AT_FDCWD, "${ROOT}/.npmrc", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)`,
  `10 clone(child_stack=NULL, flags=SIGCHLD) = 2 /* 11 in strace's PID NS */`,
  `11 execve("${ROOT}/node_modules/.bin/node", ["node", "test.js"], 0x0 /* 3 vars */) = -1 ENOENT (No such file or directory)`,
  `11 execve("${nodeBin}", ["node", "test.js"], 0x0 /* 3 vars */) = 0`,
  `11 openat(AT_FDCWD, "test.js", O_RDONLY|O_CLOEXEC) = 18`,
  `11 statx(AT_FDCWD, "${ROOT}/src/ring", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7ffe) = -1 ENOENT (No such file or directory)`,
  `11 openat(AT_FDCWD, "${ROOT}/src/ring.js", O_RDONLY|O_CLOEXEC) = 19`,
  ...extra,
];

describe('what the base reached is product code', () => {
  it('a file the tests read on the base, and a missing module they looked for, are product; a runner config lookup is not', async () => {
    const base = await trace(npmThenNode());
    const changes: Change[] = [
      { status: 'M', path: 'src/ring.js' },
      { status: 'A', path: 'src/ring' },
      { status: 'A', path: '.npmrc' },
      { status: 'A', path: 'README.md' },
    ];
    const verified = await trace(npmThenNode([`10 openat(AT_FDCWD, "${ROOT}/.npmrc", O_RDONLY|O_CLOEXEC) = 20`]));
    const got = Object.fromEntries(classifyChanges(changes, base, verified).map((i) => [i.path, i.class]));
    expect(got).toEqual({ 'src/ring.js': 'product', 'src/ring': 'product', '.npmrc': 'harness', 'README.md': 'untouched' });
  });

  it('a new file beside code the base compiled, of the same kind, is product (a new .go file in a package under test); control: a new package is not', async () => {
    const go = (extra: string[]) => [
      `30 execve("/usr/local/go/pkg/tool/linux_amd64/compile", ["compile"], 0x0) = 0`,
      `30 openat(AT_FDCWD, "${ROOT}/ring.go", O_RDONLY|O_CLOEXEC) = 3`,
      `30 openat(AT_FDCWD, "${ROOT}/ring_test.go", O_RDONLY|O_CLOEXEC) = 3`,
      ...extra,
    ];
    const base = await trace(go([]));
    const verified = await trace(
      go([`30 openat(AT_FDCWD, "${ROOT}/drop.go", O_RDONLY|O_CLOEXEC) = 3`, `30 openat(AT_FDCWD, "${ROOT}/merge/__init__.py", O_RDONLY) = 3`]),
    );
    const got = classifyChanges(
      [
        { status: 'A', path: 'drop.go' },
        { status: 'A', path: 'merge/__init__.py' },
      ],
      base,
      verified,
    );
    expect(got.map((g) => g.class)).toEqual(['product', 'new']);
  });

  it("a fork's cwd follows it: a relative path in a child is placed under its parent's directory", async () => {
    const t = await trace([
      `10 chdir("${ROOT}/pkg") = 0`,
      `10 clone(child_stack=NULL, flags=SIGCHLD) = 2 /* 12 in strace's PID NS */`,
      `12 openat(AT_FDCWD, "test_a.py", O_RDONLY) = 3`,
      `12 openat(AT_FDCWD, "lib.py", O_RDONLY) = 4`,
    ]);
    expect([...t.inside.keys()].sort()).toEqual(['pkg/lib.py', 'pkg/test_a.py']);
    expect(t.unplaced).toBe(0);
  });

  // strace -f prints a child's first calls before its parent's clone returns whenever the child
  // runs first, as bwrap's clone of the check's shell does now and then on a loaded machine
  const childFirst = (check: string[]) => [
    `24140 execve("/usr/bin/bwrap", ["/usr/bin/bwrap", "--chdir", "${ROOT}"], 0x7ffe /* 2 vars */) = 0`,
    `24140 clone(child_stack=NULL, flags=CLONE_NEWNS|CLONE_NEWPID|SIGCHLD) = 24141`,
    `24141 chdir("/") = 0`,
    `24141 chdir("${ROOT}") = 0`,
    `24141 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>`,
    `24142 execve("/usr/bin/bash", ["/usr/bin/bash", "-c", "test -f b.txt"], 0x55b3 /* 17 vars */) = 0`,
    ...check,
    `24141 <... clone resumed>, child_tidptr=0x7f51) = 2 /* 24142 in strace's PID NS */`,
  ];

  it("a child whose calls the log shows before its parent's clone returns is placed in its parent's directory once the clone returns", async () => {
    const base = await trace(childFirst([`24142 newfstatat(AT_FDCWD, "b.txt", 0x7ffc, 0) = -1 ENOENT (No such file or directory)`]));
    expect([...base.inside.keys()]).toEqual(['b.txt']);
    expect(base.unplaced).toBe(0);
    // what `test -f b.txt` looked for on the base is product code: adding it earns the pass, no person needed
    const verified = await trace(childFirst([`24142 newfstatat(AT_FDCWD, "b.txt", {st_mode=S_IFREG|0644, st_size=2, ...}, 0) = 0`]));
    expect(classifyChanges([{ status: 'A', path: 'b.txt' }], base, verified)).toEqual([
      { path: 'b.txt', class: 'product', how: 'looked for by the check on the base' },
    ]);
  });

  it("such a child's own chdir is kept (the clone's return does not put it back in its parent's directory); one no clone names stays unplaced", async () => {
    const t = await trace([
      ...childFirst([`24142 chdir("sub") = 0`, `24142 openat(AT_FDCWD, "lib.py", O_RDONLY) = 3`]),
      `24142 openat(AT_FDCWD, "test_x.py", O_RDONLY) = 4`,
      `24999 openat(AT_FDCWD, "stray.py", O_RDONLY) = 5`,
      `24999 openat(AT_FDCWD, "${ROOT}/abs.py", O_RDONLY) = 6`,
    ]);
    expect([...t.inside.keys()].sort()).toEqual(['abs.py', 'sub/lib.py', 'sub/test_x.py']);
    expect(t.unplaced).toBe(1);
  });
});

describe('harness: how the tests run, whatever the file is called', () => {
  it('attack: a changed file executed in place of the program the base ran is harness; control: a product script the tests run is not', async () => {
    const base = await trace(npmThenNode([`11 execve("${ROOT}/bin/cli.sh", ["bin/cli.sh"], 0x0) = 0`]));
    const verified = await trace(npmThenNode([`11 execve("${ROOT}/bin/cli.sh", ["bin/cli.sh"], 0x0) = 0`], `${ROOT}/node_modules/.bin/node`));
    const got = classifyChanges(
      [
        { status: 'A', path: 'node_modules/.bin/node' },
        { status: 'M', path: 'bin/cli.sh' },
      ],
      base,
      verified,
    );
    expect(got[0]).toMatchObject({ class: 'harness', how: expect.stringContaining('in place of /usr/bin/node') });
    expect(got[1]!.class).toBe('product');
  });

  it('attack: a file only the runner uses (no process that loaded a test read it) is harness; control: a new module the tests import is not', async () => {
    const base = await trace(npmThenNode());
    const verified = await trace(
      npmThenNode([`10 openat(AT_FDCWD, "${ROOT}/tools/preload.js", O_RDONLY) = 21`, `11 openat(AT_FDCWD, "${ROOT}/lib/helpers.js", O_RDONLY) = 22`]),
    );
    const got = Object.fromEntries(
      classifyChanges(
        [
          { status: 'A', path: 'tools/preload.js' },
          { status: 'A', path: 'lib/helpers.js' },
        ],
        base,
        verified,
      ).map((i) => [i.path, i.class]),
    );
    expect(got).toEqual({ 'tools/preload.js': 'harness', 'lib/helpers.js': 'new' });
  });

  it('a child the test process starts runs tests too: the product CLI it runs is not runner-only', async () => {
    const t = await trace(
      npmThenNode([`11 clone(child_stack=NULL, flags=SIGCHLD) = 3 /* 13 in strace's PID NS */`, `13 openat(AT_FDCWD, "${ROOT}/bin/cli.js", O_RDONLY) = 3`]),
    );
    expect(t.runnerOnly.has('bin/cli.js')).toBe(false);
    expect(t.runnerOnly.has('package.json')).toBe(true);
  });

  it('attack: a top-level module named like one the base loaded from the toolchain is harness; control: the same name inside a package is not', async () => {
    const py = (extra: string[]) => [
      `20 execve("/usr/bin/python3", ["python3", "-m", "unittest"], 0x0) = 0`,
      `20 openat(AT_FDCWD, "/usr/lib/python3.11/unittest/__init__.py", O_RDONLY|O_CLOEXEC) = 3`,
      `20 openat(AT_FDCWD, "${ROOT}/test_calc.py", O_RDONLY|O_CLOEXEC) = 3`,
      `20 openat(AT_FDCWD, "${ROOT}/calc.py", O_RDONLY|O_CLOEXEC) = 3`,
      ...extra,
    ];
    const base = await trace(py([]));
    const verified = await trace(
      py([`20 openat(AT_FDCWD, "${ROOT}/unittest.py", O_RDONLY) = 4`, `20 openat(AT_FDCWD, "${ROOT}/calc/unittest.py", O_RDONLY) = 4`]),
    );
    const got = classifyChanges(
      [
        { status: 'A', path: 'unittest.py' },
        { status: 'A', path: 'calc/unittest.py' },
      ],
      base,
      verified,
    );
    expect(got.map((g) => g.class)).toEqual(['harness', 'new']);
  });

  it('attack: code under test that rewrites a test file on disk while the checks run; control: a file the base run wrote too, and an untracked output', async () => {
    const wrote = (p: string) => `11 openat(AT_FDCWD, "${ROOT}/${p}", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 23`;
    const base = await trace(npmThenNode([wrote('fixtures/db.sqlite')]));
    const verified = await trace(npmThenNode([wrote('test_more.js'), wrote('fixtures/db.sqlite'), wrote('out/report.txt')]));
    const tracked = new Set(['test.js', 'test_more.js', 'src/ring.js', 'fixtures/db.sqlite', 'package.json']);
    expect(rewrittenByChecks(tracked, base, verified).map((i) => i.path)).toEqual(['test_more.js']);
  });

  it('a check that loads no test file (a build, `test -f`) is all code under test: what it looked for is product', async () => {
    const base = await trace([
      `10 execve("/usr/bin/bash", ["bash", "-c", "test -f b.txt"], 0x0) = 0`,
      `10 newfstatat(AT_FDCWD, "b.txt", 0x7ffe, 0) = -1 ENOENT (No such file or directory)`,
    ]);
    const verified = await trace([
      `10 execve("/usr/bin/bash", ["bash", "-c", "test -f b.txt"], 0x0) = 0`,
      `10 newfstatat(AT_FDCWD, "b.txt", {st_mode=S_IFREG|0644, st_size=4, ...}, 0) = 0`,
    ]);
    const got = classifyChanges([{ status: 'A', path: 'b.txt' }], base, verified);
    expect(got[0]!.class).toBe('product');
    expect(counterfactualNeeded(got, verified)).toBe(false);
  });

  it('without any test file in the trace, nothing is called runner-only (nobody can tell)', async () => {
    const t = await trace([`10 execve("/usr/bin/make", ["make"], 0x0) = 0`, `10 openat(AT_FDCWD, "${ROOT}/Makefile", O_RDONLY) = 3`]);
    expect(t.runnerOnly.size).toBe(0);
  });
});

describe('the counterfactual', () => {
  it('takes out the product changes only, and runs only when something else was used by the checks', async () => {
    const base = await trace(npmThenNode());
    const onlyProduct = classifyChanges([{ status: 'M', path: 'src/ring.js' }], base, await trace(npmThenNode()));
    expect(productPaths(onlyProduct)).toEqual(['src/ring.js']);
    expect(counterfactualNeeded(onlyProduct, base)).toBe(false);
    const verified = await trace(npmThenNode([`11 openat(AT_FDCWD, "${ROOT}/vendor/extra.js", O_RDONLY) = 22`]));
    const withNew = classifyChanges(
      [
        { status: 'M', path: 'src/ring.js' },
        { status: 'A', path: 'vendor/extra.js' },
      ],
      base,
      verified,
    );
    expect(counterfactualNeeded(withNew, verified)).toBe(true);
  });

  const baseline = (tests: Record<string, 'pass' | 'fail'>, exitCode = 1): BaselineCheck => ({
    command: 'npm test',
    exitCode,
    results: { formats: ['tap'], tests, passed: 0, failed: Object.values(tests).filter((s) => s === 'fail').length, skipped: 0 },
  });
  const judged = (tests: Record<string, 'pass' | 'fail'>, passed: boolean): CheckJudgement => ({
    passed,
    findings: [],
    failingTests: [],
    results: { formats: ['tap'], tests, passed: 0, failed: 0, skipped: 0 },
  });

  it('attack: what failed on the base passes without the product change → named; control: it fails again → nothing', () => {
    const b = baseline({ a: 'pass', b: 'fail' });
    expect(passedWithoutProduct(b, judged({ a: 'pass', b: 'pass' }, true))).toEqual(['b']);
    expect(passedWithoutProduct(b, judged({ a: 'pass', b: 'fail' }, false))).toEqual([]);
  });

  it('an id that changes from run to run is matched by its stable part, never through a case that passed on the base', () => {
    const b = baseline({ 'test_x[0x7f01]': 'fail', 'test_y[1]': 'fail', 'test_y[2]': 'pass' });
    expect(passedWithoutProduct(b, judged({ 'test_x[0x7f99]': 'pass', 'test_y[1]': 'fail', 'test_y[2]': 'pass' }, false))).toEqual(['test_x[0x7f01]']);
    expect(passedWithoutProduct(b, judged({ 'test_x[0x7f99]': 'fail', 'test_y[2]': 'pass' }, false))).toEqual([]);
  });

  it('a runner that names no test is judged as a whole', () => {
    const b: BaselineCheck = { command: 'make check', exitCode: 2, results: { formats: [], tests: {}, passed: 0, failed: 0, skipped: 0 } };
    expect(failedOnBase(b)).toBe(true);
    expect(passedWithoutProduct(b, { ...judged({}, true), results: b.results })).toEqual(['`make check` as a whole']);
    expect(failedOnBase({ ...b, exitCode: 0 })).toBe(false);
  });

  it('a stored trace reads back the same', async () => {
    const t = await trace(npmThenNode());
    const back = loadTrace(JSON.parse(JSON.stringify(storeTrace(t))));
    expect(back).toEqual(t);
    expect(mergeTraces([t, back]).inside.get('src/ring.js')).toEqual(new Set(['read']));
  });
});
