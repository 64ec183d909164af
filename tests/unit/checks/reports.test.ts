/** Structured results: what runners are asked to write, what is read back, and how it is trusted. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, resultsOf, type CheckRun } from '../../../src/checks/judge.js';
import { readReports, reportEnv, type Report } from '../../../src/checks/reports.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const junit = (text: string): Report => ({ kind: 'junit-xml', file: 'pytest.xml', text });
const run = (output: string, exitCode: number, reports?: Report[]): CheckRun => ({
  command: 'pytest',
  exitCode,
  timedOut: false,
  output,
  ...(reports ? { reports } : {}),
});
const tmp = mkdtempSync(join(tmpdir(), 'kiln-reports-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('reportEnv', () => {
  it('asks pytest for JUnit XML in the directory instead of -rA, and keeps go verbose and uncached', () => {
    const env = reportEnv('/kiln/reports');
    expect(env.PYTEST_ADDOPTS).toBe('-p no:cacheprovider --junitxml=/kiln/reports/pytest.xml');
    expect(env.PYTEST_ADDOPTS).not.toContain('-rA');
    expect(env.GOFLAGS).toBe('-v -count=1');
  });
});

describe('readReports', () => {
  it('reads the JUnit files a runner wrote; ignores junk, links and anything but regular files', async () => {
    const dir = join(tmp, 'read');
    mkdirSync(dir);
    writeFileSync(join(dir, 'pytest.xml'), fixture('pytest-junit.xml'));
    writeFileSync(join(dir, 'junk.xml'), 'not xml at all');
    writeFileSync(join(dir, 'notes.txt'), '<testsuites/>');
    writeFileSync(join(tmp, 'outside.xml'), '<testsuites><testsuite name="x"/></testsuites>');
    symlinkSync(join(tmp, 'outside.xml'), join(dir, 'link.xml'));
    mkdirSync(join(dir, 'dir.xml'));
    const reports = await readReports(dir);
    expect(reports.map((r) => [r.kind, r.file])).toEqual([['junit-xml', 'pytest.xml']]);
  });

  it('a directory that is not there gives no reports', async () => {
    expect(await readReports(join(tmp, 'missing'))).toEqual([]);
  });
});

describe('pytest JUnit report first, text as the fallback', () => {
  const text = fixture('pytest-text.txt');
  const xml = fixture('pytest-junit.xml');

  it('gives pytest ids (path::Class::test[param]) with skips and xfails as not passed', () => {
    const r = resultsOf(run(text, 1, [junit(xml)]));
    expect(r.formats).toEqual(['pytest junit']);
    expect(r.tests).toMatchObject({
      'tests/test_mod.py::test_plain': 'pass',
      'tests/test_mod.py::test_fails': 'fail',
      'tests/test_mod.py::test_skipped': 'skip',
      'tests/test_mod.py::test_xf': 'skip',
      'tests/test_mod.py::test_addr[x0]': 'pass',
      'tests/test_mod.py::TestGroup::test_param[2]': 'pass',
    });
    expect([r.passed, r.failed, r.skipped]).toEqual([6, 1, 2]);
    // the same failing id as the text names it: either source judges against the other's names
    expect(resultsOf(run(text, 1)).tests['tests/test_mod.py::test_fails']).toBe('fail');
  });

  it('a report whose counts disagree with the printed summary is not trusted: the text is read, in doubt', () => {
    const partial = xml.replace(/<testcase classname="tests\.test_mod\.TestGroup"[^]*?<\/testsuite>/, '</testsuite>');
    const r = resultsOf(run(text, 1, [junit(partial)]));
    expect(r.formats).toEqual(['pytest']);
    expect(r.doubts?.join()).toMatch(/report counts 4 test\(s\) run, its printed summary 7/);
  });

  it('attack: a report written by a check whose base wrote none, with no runner in the output to vouch for it, is ignored', () => {
    const mochaBase = baselineOf(run('  ✔ a\n  1) b\n\n  1 passing (1ms)\n  1 failing\n\n  1) b:\n     Error\n', 1));
    const fake = judgeCheck(run('  ✔ a\n\n  1 passing (1ms)\n', 0, [junit(xml.replace(/<failure[^]*?<\/failure>/, ''))]), mochaBase);
    expect(fake.results.formats).toEqual(['mocha']);
    expect(fake.findings.join()).toMatch(/fewer tests ran than on the base \(1 < 2\)/);
  });

  it('control: a quiet pytest (-qq prints no counts) is read from its report when the base wrote one too', () => {
    const quiet = (x: string) => run('.F.s\n', 1, [junit(x)]);
    const base = baselineOf(quiet(xml));
    expect(base.results.formats).toEqual(['pytest junit']);
    const fixed = xml.replace(/(name="test_fails" time="[\d.]+")>[^]*?<\/testcase>/, '$1 />');
    expect(judgeCheck(run('....\n', 0, [junit(fixed)]), base)).toMatchObject({ passed: true, findings: [] });
    const dropped = fixed.replace(/<testcase classname="tests\.test_mod" name="test_fails"[^>]*\/>/, '');
    expect(judgeCheck(run('....\n', 0, [junit(dropped)]), base).findings.join()).toMatch(/fewer tests ran than on the base \(6 < 7\)/);
  });

  it('attack: the failing test xfailed after the change fails; control: the fix passes', () => {
    const base = baselineOf(run(text, 1, [junit(xml)]));
    const fixedXml = xml.replace(/(name="test_fails" time="[\d.]+")>[^]*?<\/testcase>/, '$1 />');
    const fixedText = text.replace(/1 failed, 6 passed/, '7 passed');
    expect(judgeCheck(run(fixedText, 0, [junit(fixedXml)]), base)).toMatchObject({ passed: true, findings: [] });
    const xfailXml = xml.replace(/(name="test_fails" time="[\d.]+")>[^]*?<\/testcase>/, '$1><skipped type="pytest.xfail" message="" /></testcase>');
    const xfailText = text.replace(/1 failed, 6 passed, 1 skipped, 1 xfailed/, '6 passed, 1 skipped, 2 xfailed');
    const j = judgeCheck(run(xfailText, 0, [junit(xfailXml)]), base);
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/failed on the base were skipped, not passed: tests\/test_mod.py::test_fails/);
  });

  it('attack: a test that passed on the base and is skipped now fails', () => {
    const base = baselineOf(run(text, 1, [junit(xml)]));
    const fixedXml = xml
      .replace(/(name="test_fails" time="[\d.]+")>[^]*?<\/testcase>/, '$1 />')
      .replace('name="test_in_class" time="0.000" />', 'name="test_in_class" time="0.000"><skipped type="pytest.skip" message="x" /></testcase>');
    const fixedText = text.replace(/1 failed, 6 passed, 1 skipped/, '6 passed, 2 skipped');
    const j = judgeCheck(run(fixedText, 0, [junit(fixedXml)]), base);
    expect(j.findings.join()).toMatch(/passed on the base are skipped now: tests\/test_mod.py::TestGroup::test_in_class/);
  });
});

describe('a base that could not collect its tests', () => {
  const base = baselineOf(run(fixture('pytest-text-collect-error.txt'), 2, [junit(fixture('pytest-junit-collect-error.xml'))]));
  const module = (body: string, counts: string) =>
    run(`${counts}\n`, 0, [
      junit(`<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest">${body}</testsuite></testsuites>`),
    ]);

  it('reads the module that failed to collect', () => {
    expect(base.results.collectErrors).toEqual(['tests/test_broken.py']);
    expect(resultsOf(run(fixture('pytest-text-collect-error.txt'), 2)).collectErrors).toEqual(['tests/test_broken.py']);
  });

  it('attack: the broken module skipped at import (importorskip) fails', () => {
    const j = judgeCheck(module('<testcase classname="" name="tests.test_broken"><skipped message="no module" /></testcase>', '1 skipped in 0.01s'), base);
    expect(j.passed).toBe(false);
    expect(j.findings.join()).toMatch(/could not load tests\/test_broken.py; after the change test\(s\) are skipped there: tests\/test_broken.py/);
  });

  it('attack: a test in the broken module skipped fails; control: it runs and passes', () => {
    const skipped = module(
      '<testcase classname="tests.test_broken" name="test_never"><skipped message="x" /></testcase><testcase classname="tests.test_mod" name="test_plain" />',
      '1 passed, 1 skipped in 0.01s',
    );
    expect(judgeCheck(skipped, base).passed).toBe(false);
    const ran = module(
      '<testcase classname="tests.test_broken" name="test_never" /><testcase classname="tests.test_mod" name="test_plain" />',
      '2 passed in 0.01s',
    );
    expect(judgeCheck(ran, base)).toMatchObject({ passed: true, findings: [] });
  });

  it('control: a skip in another module, which the base never reached, is not held against the change', () => {
    const other = module(
      '<testcase classname="tests.test_broken" name="test_never" /><testcase classname="tests.test_win" name="test_only_windows"><skipped message="win32" /></testcase>',
      '1 passed, 1 skipped in 0.01s',
    );
    expect(judgeCheck(other, base)).toMatchObject({ passed: true, findings: [] });
  });
});
