/**
 * The real build's bundle of `kiln run` lists what it was made from, so bin/kiln.js can tell a
 * stale bundle (tests/unit/bin/run-bundle.test.ts). Here, not in the unit tier: it reads dist/.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

describe('the run bundle of the real build', () => {
  it('lists what its bundle was made from, the packages included', () => {
    const real = JSON.parse(readFileSync(join(ROOT, 'dist', 'src', 'cli', 'run-main.bundle.json'), 'utf8')) as { madeFrom: string[] };
    expect(real.madeFrom).toEqual(
      expect.arrayContaining(['run-main.js', 'commands/run.js', '../temporal/connection.js', '../../../node_modules/.package-lock.json']),
    );
  });
});
