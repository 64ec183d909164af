/**
 * ava's default reporter: "✔ file › title", "✘ [fail]: file › title message", "- [skip] …",
 * "- [todo] …", "✔ [expected fail] …" (test.failing: a known failure, not a pass), then "N tests
 * passed" (printed only when nothing failed), "N tests failed", "N known failures", "N tests
 * skipped", "N tests todo", "N uncaught exceptions", "N unhandled rejections".
 */
import { add, type TestResults } from './model.js';

const count = (out: string, re: RegExp) => Number(re.exec(out)?.[1] ?? 0);

export function ava(out: string, r: TestResults): boolean {
  const summary = /^[ \t]*\d+ (?:tests? (?:passed|failed)|known failures?|hooks? failed)[ \t\r]*$/m;
  if (!summary.test(out) && !/^[ \t]*✘ \[fail\]: /m.test(out)) return false;
  const lines = out.split('\n');
  // the failure section repeats each failed test's title alone on the line after a rule: it
  // tells where a "[fail]:" line's title ends and the error message begins
  const titles = new Set<string>();
  for (let i = 0; i + 2 < lines.length; i++)
    if (/^[ \t]*─[ \t\r]*$/.test(lines[i]!) && !lines[i + 1]!.trim() && lines[i + 2]!.trim()) titles.add(lines[i + 2]!.trim());
  let passes = 0;
  for (const line of lines) {
    let m = /^[ \t]*✔ (\[expected fail\] )?(.+?)(?: \(\d+(?:\.\d+)?m?s\))?[ \t\r]*$/.exec(line);
    if (m) {
      add(r, m[2]!, m[1] ? 'skip' : 'pass');
      if (!m[1]) passes++;
      continue;
    }
    m = /^[ \t]*✘ \[(?:fail|unexpected pass)\]: (.+?)[ \t\r]*$/.exec(line);
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
    m = /^[ \t]*- \[(?:skip|todo)\] (.+?)[ \t\r]*$/.exec(line);
    if (m) add(r, m[1]!, 'skip');
  }
  r.passed += count(out, /^[ \t]*(\d+) tests? passed[ \t\r]*$/m) || passes;
  r.failed +=
    count(out, /^[ \t]*(\d+) tests? failed\b/m) +
    count(out, /^[ \t]*(\d+) hooks? failed\b/m) +
    count(out, /^[ \t]*(\d+) uncaught exceptions?[ \t\r]*$/m) +
    count(out, /^[ \t]*(\d+) unhandled rejections?[ \t\r]*$/m) +
    count(out, /^[ \t]*(\d+) tests? remained pending after a timeout[ \t\r]*$/m);
  r.skipped +=
    count(out, /^[ \t]*(\d+) known failures?[ \t\r]*$/m) +
    count(out, /^[ \t]*(\d+) tests? skipped[ \t\r]*$/m) +
    count(out, /^[ \t]*(\d+) tests? todo[ \t\r]*$/m);
  return true;
}
