// Bundles `kiln run` (dist/src/cli/run-main.js and all it loads, the Temporal client included)
// into one CommonJS file that bin/kiln.js loads for `kiln run` with V8's code cache
// (bin/code-cache.js): Node resolves, reads and links one module instead of a few hundred, and
// the first model request comes that much sooner (docs/bench.md).
// Part of `npm run build`, after tsc. Beside it, the files it was made from: bin/kiln.js uses the
// bundle only while none of them is newer than it.
import { build } from 'rolldown';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const input = fileURLToPath(new URL('../dist/src/cli/run-main.js', import.meta.url));
const file = fileURLToPath(new URL('../dist/src/cli/run-main.bundle.cjs', import.meta.url));

const problems = [];
const { output } = await build({
  input,
  platform: 'node',
  // anything left outside the bundle would be loaded file by file again: say so instead
  onLog: (level, log) => (level === 'warn' ? problems.push(log.message) : undefined),
  output: { file, format: 'cjs', codeSplitting: false, comments: { legal: true, annotation: false, jsdoc: false } },
});
if (problems.length) {
  process.stderr.write(`bundle-cli: ${problems.length} warning(s) bundling ${input}:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exit(1);
}
// the code caches of earlier bundles (bin/code-cache.js) are of no use to this one
for (const f of readdirSync(dirname(file))) if (f.startsWith('run-main.bundle.cjs.') && f.endsWith('.cache')) rmSync(join(dirname(file), f), { force: true });
// Kiln's own compiled files change with every build; the packages change with an install
const own = output[0].moduleIds.filter((id) => id.startsWith(`${root}dist/`));
const madeFrom = [...own, `${root}node_modules/.package-lock.json`].map((f) => relative(dirname(file), f));
writeFileSync(file.replace(/\.cjs$/, '.json'), JSON.stringify({ madeFrom }) + '\n');
process.stdout.write(`bundled kiln run: ${relative(root, file)} (${(statSync(file).size / 1e6).toFixed(1)} MB, ${output[0].moduleIds.length} modules)\n`);
