/**
 * mocha's reporters. The listing (before "N passing") names each test where it ran; the spec
 * reporter indents it under its describe blocks, two spaces a level, and a test's identity is
 * its full title as mocha builds it (suite titles and the test's, joined by spaces). The summary
 * after "N passing" repeats each failure as a numbered header spread over several lines (the
 * describe titles, then the test's title ending in ":"): it is not a listing — a describe title
 * on its first line is not a test — and is read for names only when the listing named no
 * failure (dot, progress). A check may run mocha more than once: after a summary's headers, the
 * next run's listing begins.
 */
import { add, doubt, type TestResults, type TestStatus } from './model.js';

const TIME = /(?::[ \t]+\d+ms|[ \t]+\(\d+ms\))$/;
const MARK = /^( *)(?:[✓✔]|(\d+)\)|-) (.+)$/;
const PASSING = /^ {2}(\d+) passing \([^)]*\)$/;

export function mocha(out: string, r: TestResults): boolean {
  if (!/^ {2}\d+ passing \([^)]*\)[ \t\r]*$/m.test(out)) return false;
  const lines = out.split('\n');
  const suites: string[] = [];
  let listed = 0;
  let listedThisRun = 0;
  let inSummary = false;
  let headersLeft = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    // the list reporter rewrites its line after a carriage return: the last write is the result
    const line = raw.slice(raw.lastIndexOf('\r') + 1).trimEnd();
    if (!line.trim()) continue;
    let m = PASSING.exec(line);
    if (m) {
      r.passed += Number(m[1]);
      inSummary = true;
      headersLeft = 0;
      continue;
    }
    if (inSummary && (m = /^ {2}(\d+) (failing|pending)$/.exec(line))) {
      if (m[2] === 'pending') r.skipped += Number(m[1]);
      else {
        r.failed += Number(m[1]);
        headersLeft = Number(m[1]);
      }
      continue;
    }
    if (headersLeft > 0) {
      const head = /^ {2}\d+\) (.*)$/.exec(line);
      if (!head) continue;
      headersLeft--;
      const parts = [head[1]!.trim()];
      while (!parts[parts.length - 1]!.endsWith(':') && i + 1 < lines.length && /^ {5,}\S/.test(lines[i + 1]!) && parts.length < 20)
        parts.push(lines[++i]!.trim());
      const last = parts[parts.length - 1]!;
      if (listedThisRun === 0 && last.endsWith(':')) {
        parts[parts.length - 1] = last.slice(0, -1);
        add(r, parts.join(' '), 'fail');
      }
      if (headersLeft === 0) {
        inSummary = false;
        listedThisRun = 0;
      }
      continue;
    }
    const indent = /^ */.exec(line)![0].length;
    // one level is two spaces, starting at two: anything else is a test's own output
    if (indent < 2 || indent % 2) continue;
    const level = indent / 2 - 1;
    const mark = MARK.exec(line);
    if (!mark) {
      suites.length = level;
      suites[level] = line.trim();
      continue;
    }
    if (inSummary) {
      // a run with no failure has no headers: its summary ends where the next listing begins
      inSummary = false;
      listedThisRun = 0;
    }
    const sign = line.trimStart()[0];
    const status: TestStatus = sign === '-' ? 'skip' : mark[2] ? 'fail' : 'pass';
    // spec nests a test under the suites above it; list prints full titles at the first level
    add(r, [...suites.slice(0, level), mark[3]!.replace(TIME, '')].join(' '), status);
    if (status === 'fail') {
      listed++;
      listedThisRun++;
    }
  }
  if (listed && listed !== r.failed) doubt(r, `mocha's listing names ${listed} failure(s), its summary counts ${r.failed}`);
  return true;
}
