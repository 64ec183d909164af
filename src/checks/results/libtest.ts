/**
 * Rust's libtest (cargo test): one block per test binary ("Running unittests src/lib.rs (…)",
 * "Running tests/it.rs (…)", "Doc-tests name"), each line "test a::b ... ok|FAILED|ignored" and
 * "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out". A name is only
 * unique within its binary, so it is kept as "<binary source>::<name>".
 */
import { add, type TestResults } from './model.js';

const RESULT = /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;/;

export function libtest(out: string, r: TestResults): boolean {
  let seen = false;
  let binary = '';
  for (const line of out.split('\n')) {
    const running = /^[ \t]*(?:Running (?:unittests )?(\S+)(?: \(|\s*$)|Doc-tests (\S+))/.exec(line);
    if (running) {
      binary = running[1] ?? `doc-tests ${running[2]}`;
      continue;
    }
    const test = /^test (.+?) \.\.\. (ok|FAILED|ignored)\b/.exec(line);
    if (test) {
      add(r, binary ? `${binary}::${test[1]}` : test[1]!, test[2] === 'ok' ? 'pass' : test[2] === 'FAILED' ? 'fail' : 'skip');
      continue;
    }
    const result = RESULT.exec(line);
    if (!result) continue;
    seen = true;
    r.passed += Number(result[1]);
    r.failed += Number(result[2]);
    r.skipped += Number(result[3]);
  }
  return seen;
}
