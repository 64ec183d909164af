/**
 * Machine-readable results that runners write beside their usual output, asked for through the
 * environment so the user's command stays as it is. Verified here:
 * - pytest: PYTEST_ADDOPTS=--junitxml=<dir>/pytest.xml writes JUnit XML and leaves the printed
 *   output and exit code as they were (pytest 9). It replaces "-rA", whose summary of passes
 *   grows quadratically with the number of tests.
 * - go test: GOFLAGS=-v prints each test's result (-json cannot be asked for without replacing
 *   the output the user sees); -count=1 keeps go from replaying cached results.
 * Not asked for, and why: node:test takes reporters from NODE_OPTIONS, but a command that names
 * its own --test-reporter then fails ("must match the number of specified
 * --test-reporter-destination"), and its TAP on stdout is already per test. jest, vitest, mocha
 * and ava cannot be told by the environment; cargo's libtest JSON needs a nightly flag. Their
 * text is read (results/text.ts).
 */
import { constants } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJunit } from './results/junit.js';
import type { TestResults } from './results/model.js';

export interface Report {
  kind: 'junit-xml';
  /** the file's name inside the reports directory */
  file: string;
  text: string;
}

/** A report larger than this is left unread (the text output is read instead). */
const MAX_REPORT_BYTES = 64 * 1024 * 1024;
const MAX_REPORTS = 8;

/** The environment of a check's process, with `dir` the reports directory as the sandboxed command sees it. */
export function reportEnv(dir: string): Record<string, string> {
  return {
    GOFLAGS: '-v -count=1',
    PYTEST_ADDOPTS: `-p no:cacheprovider --junitxml=${join(dir, 'pytest.xml')}`,
  };
}

/**
 * What the runners wrote into `hostDir` (the same directory, seen from the host). The check's
 * process could write anything there: only regular files are read (never through a link), each
 * up to a size, and what does not parse is ignored.
 */
export async function readReports(hostDir: string): Promise<Report[]> {
  let names: string[];
  try {
    names = (await readdir(hostDir)).filter((n) => n.endsWith('.xml')).sort();
  } catch {
    return [];
  }
  const reports: Report[] = [];
  for (const file of names.slice(0, MAX_REPORTS)) {
    let fh;
    try {
      fh = await open(join(hostDir, file), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      const st = await fh.stat();
      if (!st.isFile() || st.size === 0 || st.size > MAX_REPORT_BYTES) continue;
      const text = await fh.readFile('utf8');
      if (/^\s*(?:<\?xml[^>]*\?>\s*)?<testsuites?\b/.test(text.slice(0, 4096))) reports.push({ kind: 'junit-xml', file, text });
    } catch {
      // a file that vanished, a link, a FIFO: not a report
    } finally {
      await fh?.close();
    }
  }
  return reports;
}

/** Each report's per-test results, by the runner that wrote it ("pytest junit"); unreadable ones are left out. */
export function parseReports(reports: readonly Report[]): TestResults[] {
  const out: TestResults[] = [];
  for (const rep of reports) {
    const r = rep.kind === 'junit-xml' ? parseJunit(rep.text) : undefined;
    if (r) out.push(r);
  }
  return out;
}
