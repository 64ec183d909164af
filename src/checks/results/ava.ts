/**
 * ava's default reporter: "✔ file › title", "✘ [fail]: file › title message", "- [skip] …",
 * "- [todo] …", "✔ [expected fail] …" (test.failing: a known failure, not a pass), then "N tests
 * passed" (printed only when nothing failed), "N tests failed", "N known failures", "N tests
 * skipped", "N tests todo", "N uncaught exceptions", "N unhandled rejections".
 */
import { add, type TestResults } from './model.js';

const count = (out: string, re: RegExp) => Number(re.exec(out)?.[1] ?? 0);

export function ava(out: string, r: TestResults): boolean {
  const summary = /^\s*\d+ (?:tests? (?:passed|failed)|known failures?|hooks? failed)\s*$/m;
  if (!summary.test(out) && !/^\s*✘ \[fail\]: /m.test(out)) return false;
  const lines = out.split('\n');
  // the failure section repeats each failed test's title alone on the line after a rule: it
  // tells where a "[fail]:" line's title ends and the error message begins
  const titles = new Set<string>();
  for (let i = 0; i + 2 < lines.length; i++) if (/^\s*─\s*$/.test(lines[i]!) && !lines[i + 1]!.trim() && lines[i + 2]!.trim()) titles.add(lines[i + 2]!.trim());
  let passes = 0;
  for (const line of lines) {
    let m = /^\s*✔ (\[expected fail\] )?(.+?)(?: \(\d+(?:\.\d+)?m?s\))?\s*$/.exec(line);
    if (m) {
      add(r, m[2]!, m[1] ? 'skip' : 'pass');
      if (!m[1]) passes++;
      continue;
    }
    m = /^\s*✘ \[(?:fail|unexpected pass)\]: (.+?)\s*$/.exec(line);
    if (m) {
      const rest = m[1]!;
      let title = rest;
      for (let k = rest.length; k > 0; k = rest.lastIndexOf(' ', k - 1)) {
        if (titles.has(rest.slice(0, k))) {
          title = rest.slice(0, k);
          break;
        }
      }
      add(r, title, 'fail');
      continue;
    }
    m = /^\s*- \[(?:skip|todo)\] (.+?)\s*$/.exec(line);
    if (m) add(r, m[1]!, 'skip');
  }
  r.passed += count(out, /^\s*(\d+) tests? passed\s*$/m) || passes;
  r.failed +=
    count(out, /^\s*(\d+) tests? failed\b/m) +
    count(out, /^\s*(\d+) hooks? failed\b/m) +
    count(out, /^\s*(\d+) uncaught exceptions?\s*$/m) +
    count(out, /^\s*(\d+) unhandled rejections?\s*$/m) +
    count(out, /^\s*(\d+) tests? remained pending after a timeout\s*$/m);
  r.skipped += count(out, /^\s*(\d+) known failures?\s*$/m) + count(out, /^\s*(\d+) tests? skipped\s*$/m) + count(out, /^\s*(\d+) tests? todo\s*$/m);
  return true;
}
