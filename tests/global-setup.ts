/**
 * Every temporary file of a test run (the tests' repositories, the scratch directories of the
 * processes they start) goes under one directory, removed when the run ends: the runner ends its
 * workers without their exit handlers, and the crash tests SIGKILL workers on purpose, so each
 * full run left thousands of entries in /tmp. Set here, before the runner starts its workers,
 * which inherit it; `npm test` and a plain `npx vitest` alike.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-tests-'));
  // as /tmp itself is: the cluster tier's PostgreSQL runs as its own user and must reach its directory
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  return () => removeTree(dir);
}

/** Best effort: a sandboxed toolchain's cache may hold read-only directories; a person can remove what is left. */
function removeTree(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    spawnSync('chmod', ['-R', 'u+w', dir]);
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      console.error(`could not remove the tests' temporary directory ${dir}: ${(err as Error).message}`);
    }
  }
}
