#!/usr/bin/env -S node --max-semi-space-size=2 --optimize-for-size
// V8's young generation capped at 2 MB a semi-space (default 16): a worker's peak resident memory
// with 50 runs at once went from 371 to 328 MB, with no start-up cost measurable for the CLI. And
// V8 sized for memory, not speed (a heap that grows less before it is collected): 50 runs at
// once peaked at 248–262 instead of 303–371 MB, for 5–15% fewer runs a minute in that burst and
// ~1–2 ms more a turn (docs/bench.md). `node bin/kiln.js` skips the shebang, and with it these
// settings: `node --max-semi-space-size=2 bin/kiln.js worker` is the worker that favours speed.
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (part of `npm run setup`).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

// Node 22.1+ keeps compiled code between runs (most of a start-up is compiling the Temporal
// client); Node 20 has no such cache, and the CLI loads only what each command needs instead
module.enableCompileCache?.();

const entry = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
if (!existsSync(entry)) {
  process.stderr.write('kiln: not built yet: run `npm run setup` (or `npm run build`) in the kiln directory first\n');
  process.exit(2);
}
// `kiln … | head` closes the pipe early: that is the reader being done, not an error
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
const bundle = process.argv[2] === 'run' ? runBundle() : undefined;
const { main } = bundle ? (await import('./code-cache.js')).requireCached(bundle) : await import(entry);
await main(process.argv);

/**
 * `kiln run` loads its own bundle (one file, built by `npm run build`) instead of the few hundred
 * files it is made of: the run's first model request waits for this start-up (docs/bench.md).
 * A bundle older than any file it was made from (a `tsc` without the bundling step, an install)
 * is not used: the compiled files are.
 */
function runBundle() {
  const bundle = fileURLToPath(new URL('../dist/src/cli/run-main.bundle.cjs', import.meta.url));
  try {
    const made = statSync(bundle).mtimeMs;
    const { madeFrom } = JSON.parse(readFileSync(bundle.replace(/\.cjs$/, '.json'), 'utf8'));
    const base = dirname(bundle);
    return madeFrom.every((f) => statSync(resolve(base, f)).mtimeMs <= made) ? bundle : undefined;
  } catch {
    return undefined;
  }
}
