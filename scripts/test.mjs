#!/usr/bin/env node
// `npm test`: every test tier (unit, workflow on the real dev server, end to end, replay), then
// one closing line "N passed, M failed" that CI and people can read at a glance.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, '.vitest-results.json');
rmSync(results, { force: true });
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
// Every temporary file of the run (the tests' repositories, the scratch directories of the
// processes they start) goes under one directory, removed at the end: the runner ends its
// workers without their exit handlers, and the crash tests SIGKILL workers on purpose, so each
// full run left thousands of entries in /tmp.
const tmp = mkdtempSync(join(tmpdir(), 'kiln-tests-'));
// as /tmp itself is: the cluster tier's PostgreSQL runs as its own user and must reach its directory
chmodSync(tmp, 0o1777);
const res = spawnSync(process.execPath, [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${results}`, ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: tmp },
});
removeTree(tmp);
if (existsSync(results)) {
  const r = JSON.parse(readFileSync(results, 'utf8'));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`);
}
process.exit(res.status ?? 1);

/** Best effort: a sandboxed toolchain's cache may hold read-only directories; a person can remove what is left. */
function removeTree(dir) {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    spawnSync('chmod', ['-R', 'u+w', dir]);
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      console.error(`could not remove the tests' temporary directory ${dir}: ${err.message}`);
    }
  }
}
