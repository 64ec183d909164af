/**
 * Where tests keep what a person looks at afterwards (browser screenshots): KILN_TEST_ARTIFACTS,
 * else test-artifacts/ in the checkout (gitignored). Kept across runs, unlike the tests' temp dirs.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ROOT } from './repo.js';

export function artifactsDir(name: string): string {
  const dir = join(resolve(process.env.KILN_TEST_ARTIFACTS || join(ROOT, 'test-artifacts')), name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
