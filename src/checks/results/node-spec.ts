/**
 * node:test's spec reporter (the default on a terminal, and everywhere from Node 23): "✔ name
 * (1.2ms)", "✖ name (…)", "﹣ name (…) # SKIP", a suite opened by "▶ name" and closed by its own
 * result line at the same indentation, then "ℹ tests 5", "ℹ pass 4", "ℹ fail 0", "ℹ skipped 1".
 * Tests are named by their own title, as node:test's TAP names them; the list of failing tests
 * after the counts repeats them and is not read.
 */
import { add, type TestResults } from './model.js';

const LINE = /^( *)([▶✔✖﹣]) (.+?)(?: \(\d+(?:\.\d+)?m?s\))?( # (?:SKIP|TODO)\b.*)?[ \t\r]*$/;

export function nodeSpec(out: string, r: TestResults): boolean {
  const total = /^ℹ tests (\d+)[ \t\r]*$/m.exec(out);
  if (!total) return false;
  const open: Array<{ indent: number; name: string }> = [];
  for (const line of out.slice(0, total.index).split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const indent = m[1]!.length;
    const name = m[3]!;
    if (m[2] === '▶') {
      open.push({ indent, name });
      continue;
    }
    const top = open[open.length - 1];
    if (top && top.indent === indent && top.name === name) {
      open.pop();
      continue;
    }
    add(r, name, m[2] === '✖' ? 'fail' : m[2] === '﹣' || m[4] ? 'skip' : 'pass');
  }
  const count = (what: string) => Number(new RegExp(`^ℹ ${what} (\\d+)[ \\t\\r]*$`, 'm').exec(out)?.[1] ?? 0);
  r.passed += count('pass');
  r.failed += count('fail') + count('cancelled');
  r.skipped += count('skipped') + count('todo');
  return true;
}
