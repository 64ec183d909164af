/** A second build of Kiln for the Worker Versioning tests: this checkout's compiled one, with one incompatible workflow change. */
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ROOT } from './repo.js';

/** the timer the changed build's workflow starts before anything else: a command this build never issues there */
export const TIMER_MS = 1234;

/**
 * This checkout's dist/ and bin/, copied to a fresh folder, with a timer of TIMER_MS before the
 * run's first activity. Its workflow bundle differs, so its derived build id does too, and it
 * cannot replay this build's runs (nor this build its). Needs `npm run build`.
 */
export function incompatibleBuild(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  cpSync(join(ROOT, 'dist', 'src'), join(root, 'dist', 'src'), { recursive: true });
  cpSync(join(ROOT, 'bin'), join(root, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(root, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  const run = join(root, 'dist', 'src', 'workflows', 'run.js');
  const head = 'export async function kilnRun(input, carry) {\n';
  const src = readFileSync(run, 'utf8');
  expect(src, 'the compiled workflow changed shape: update this helper').toContain(head);
  writeFileSync(
    run,
    `import { sleep as incompatibleTimer } from '@temporalio/workflow';\n${src.replace(head, `${head}    await incompatibleTimer(${TIMER_MS});\n`)}`,
  );
  return root;
}
