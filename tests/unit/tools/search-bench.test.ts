import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchSearch } from '../../../bench/search.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-test-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('bench/search', () => {
  it('finds the same lines as git grep on the generated repository and reports timings', async () => {
    const r = await benchSearch({ dir: path.join(dir, 'repo'), files: 400, runs: 1 });
    expect(r.files).toBe(400);
    expect(r.rows.map((x) => x.label)).toEqual(['rare literal', 'common identifier', 'regex', 'case-insensitive', 'no match']);
    for (const row of r.rows) {
      expect(row.oursMs).toBeGreaterThan(0);
      expect(row.ratio).toBeGreaterThan(0);
      const ours = row.oursSummary.match(/of (\d+) matching|^(\d+) matching|no matches/i);
      const n = ours?.[1] ?? ours?.[2] ?? (row.oursSummary.startsWith('No') || row.oursSummary === 'no matches' ? '0' : 'x');
      expect(Number(n)).toBe(row.gitGrepLines);
    }
    // Reuses the repository when its parameters match.
    const again = await benchSearch({ dir: path.join(dir, 'repo'), files: 400, runs: 1, patterns: [] });
    expect(again.setupMs).toBe(0);
  }, 60_000);
});
