/**
 * mocha's reporters. The listing (before "N passing") names each test where it ran; the spec
 * reporter indents it under its describe blocks, two spaces a level, and a test's identity is
 * its full title as mocha builds it (suite titles and the test's, joined by spaces). The summary
 * after "N passing" repeats each failure as a header spread over several lines (the describe
 * titles, then the test's title ending in ":"): it names nothing new for the spec reporter and
 * is read only when the listing named no failure (dot, progress), header lines joined whole.
 */
import { add, doubt, type TestResults, type TestStatus } from './model.js';

const TIME = /(?::\s+\d+ms|\s+\(\d+ms\))$/;
const MARK = /^( *)(?:[✓✔]|(\d+)\)|-) (.+)$/;

function listing(text: string, r: TestResults): number {
  const suites: string[] = [];
  let failures = 0;
  for (const raw of text.split('\n')) {
    // the list reporter rewrites its line after a carriage return: the last write is the result
    const line = raw.slice(raw.lastIndexOf('\r') + 1).trimEnd();
    if (!line.trim()) continue;
    const m = MARK.exec(line);
    const indent = /^ */.exec(line)![0].length;
    // one level is two spaces, starting at two: anything else is a test's own output
    if (indent < 2 || indent % 2) continue;
    const level = indent / 2 - 1;
    if (!m) {
      suites.length = level;
      suites[level] = line.trim();
      continue;
    }
    const mark = line.trimStart()[0];
    const status: TestStatus = mark === '-' ? 'skip' : m[2] ? 'fail' : 'pass';
    const title = m[3]!.replace(TIME, '');
    // spec nests a test under the suites above it; list prints full titles at the first level
    add(r, [...suites.slice(0, level), title].join(' '), status);
    if (status === 'fail') failures++;
  }
  return failures;
}

/** "  1) Suite\n       sub\n         test title:" → "Suite sub test title" */
function summaryFailures(text: string): string[] {
  const names: string[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = /^ {2}\d+\) (.*)$/.exec(lines[i]!);
    if (!head) continue;
    const parts = [head[1]!.trim()];
    let j = i;
    while (!parts[parts.length - 1]!.endsWith(':') && j + 1 < lines.length && /^ {5,}\S/.test(lines[j + 1]!) && parts.length < 20)
      parts.push(lines[++j]!.trim());
    const last = parts[parts.length - 1]!;
    if (last.endsWith(':')) {
      parts[parts.length - 1] = last.slice(0, -1);
      names.push(parts.join(' '));
    }
    i = j;
  }
  return names;
}

export function mocha(out: string, r: TestResults): boolean {
  const passing = /^[ \t]*(\d+) passing\b/m.exec(out);
  if (!passing) return false;
  const summary = out.slice(passing.index);
  r.passed += Number(passing[1]);
  r.failed += Number(/^[ \t]*(\d+) failing\b/m.exec(summary)?.[1] ?? 0);
  r.skipped += Number(/^[ \t]*(\d+) pending\b/m.exec(summary)?.[1] ?? 0);
  const listed = listing(out.slice(0, passing.index), r);
  if (listed === 0 && r.failed > 0) for (const name of summaryFailures(summary)) add(r, name, 'fail');
  else if (listed !== r.failed) doubt(r, `mocha's listing names ${listed} failure(s), its summary counts ${r.failed}`);
  return true;
}
