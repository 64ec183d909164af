#!/usr/bin/env node
// A process that hosts runs (`kiln worker`, `kiln dev`) sizes V8 for memory: a young generation
// of 2 MB a semi-space (default 16), and a heap that grows less before it is collected
// (`--optimize-for-size`). 50 runs at once on one worker peaked at 267–281 MB instead of
// 376–386 MB, for 5–15% fewer runs a minute in that burst and ~1–2 ms more a turn
// (docs/bench.md). They are set here, not in the shebang, because every other command paid for
// them at start-up (`kiln run --detach`: ~10 ms more, 10 interleaved runs each); set this late,
// the worker's own young generation keeps its default size (in the shebang: 259–266 MB). Node
// options given explicitly win; `KILN_OPTIMIZE_FOR_SIZE=0` starts a worker that favours speed.
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (part of `npm run setup`).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import module from 'node:module';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

if (['worker', 'dev'].includes(process.argv[2])) {
  const given = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`;
  // first thing, before the heap grows and before the workflow threads' heaps are made
  if (!given.includes('--max-semi-space-size')) v8.setFlagsFromString('--max-semi-space-size=2');
  if (!given.includes('optimize-for-size') && process.env.KILN_OPTIMIZE_FOR_SIZE !== '0') v8.setFlagsFromString('--optimize-for-size');
}

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
