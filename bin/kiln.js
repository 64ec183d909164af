#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (part of `npm run setup`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
