#!/usr/bin/env -S node --max-semi-space-size=2
// V8's young generation capped at 2 MB a semi-space (default 16): a worker's peak resident memory
// with 50 runs at once went from 371 to 328 MB, with no start-up cost measurable for the CLI
// (docs/bench.md). `node bin/kiln.js` skips the shebang, and with it this setting.
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (part of `npm run setup`).
import { existsSync } from 'node:fs';
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
const { main } = await import(entry);
await main(process.argv);
