import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { KILN_VERSION } from '../../../src/shared/version.js';

test('`kiln --version` says what package.json says', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  expect(KILN_VERSION).toBe(pkg.version);
});
