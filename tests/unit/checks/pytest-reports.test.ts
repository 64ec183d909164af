/**
 * reportEnv with a real pytest: the user's output and exit code stay as they were, the JUnit
 * report is read back, and the verdict comes from it (ids that carry the clock included).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baselineOf, judgeCheck, type CheckRun } from '../../../src/checks/judge.js';
import { readReports, reportEnv } from '../../../src/checks/reports.js';

const hasPytest = (() => {
  try {
    execFileSync('python3', ['-m', 'pytest', '--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const tmp = mkdtempSync(join(tmpdir(), 'kiln-pytest-reports-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SOURCE = (body: string) => `import datetime, pytest
def total(xs):
    return ${body}
def test_total():
    assert total([1, 2, 3]) == 6
def test_empty():
    assert total([]) == 0
@pytest.mark.parametrize("at", [datetime.datetime.now(), datetime.datetime.now() + datetime.timedelta(seconds=1)], ids=str)
def test_stamped(at):
    assert total([1]) == 1
`;

let n = 0;
async function pytest(source: string, env: Record<string, string> | undefined): Promise<CheckRun> {
  const dir = join(tmp, `run${n++}`);
  const reports = join(dir, 'reports');
  mkdirSync(reports, { recursive: true });
  writeFileSync(join(dir, 'test_total.py'), source);
  const res = spawnSync('python3', ['-m', 'pytest'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, ...(env ?? {}), ...(env ? {} : { PYTEST_ADDOPTS: '-p no:cacheprovider' }) },
  });
  const output = `${res.stdout}${res.stderr}`;
  return { command: 'python3 -m pytest', exitCode: res.status, timedOut: false, output, reports: await readReports(reports) };
}
// the report directory as the command sees it is the same path here (no sandbox)
const envFor = () => reportEnv(join(tmp, `run${n}`, 'reports'));

describe.skipIf(!hasPytest)('pytest with reportEnv', () => {
  it('leaves the exit code and the output as they were, apart from the line naming the report', async () => {
    const plain = await pytest(SOURCE('sum(xs) - 1'), undefined);
    const withReport = await pytest(SOURCE('sum(xs) - 1'), envFor());
    expect(withReport.exitCode).toBe(plain.exitCode);
    const norm = (s: string) =>
      s
        .replace(/in [\d.]+s/g, 'in Xs')
        .replace(/run\d+/g, 'run')
        .replace(/test_stamped\[[^\]]*\]/g, 'test_stamped[…]')
        .replace(/datetime\.datetime\([^)]*\)/g, 'datetime(…)')
        .split('\n')
        .filter((l) => !/generated xml file/.test(l))
        .join('\n');
    expect(norm(withReport.output)).toBe(norm(plain.output));
    expect(withReport.reports?.map((r) => r.file)).toEqual(['pytest.xml']);
  });

  it('the fix passes, judged from the report, though the clock changed the ids; the failing test skipped fails', async () => {
    const base = baselineOf(await pytest(SOURCE('sum(xs) - 1'), envFor()));
    expect(base.results.formats).toEqual(['pytest junit']);
    expect(base.results.tests['test_total.py::test_total']).toBe('fail');
    await new Promise((r) => setTimeout(r, 1100));
    const fixed = judgeCheck(await pytest(SOURCE('sum(xs)'), envFor()), base);
    expect(fixed).toMatchObject({ passed: true, findings: [] });
    expect(fixed.notes.join()).toMatch(/2 test id\(s\) differ from the base only in parts that change from run to run/);
    const cheat = judgeCheck(await pytest(SOURCE('sum(xs)').replace('def test_total', '@pytest.mark.skip\ndef test_total'), envFor()), base);
    expect(cheat.passed).toBe(false);
    expect(cheat.findings.join()).toMatch(/failed on the base were skipped, not passed: test_total.py::test_total/);
  });
});
