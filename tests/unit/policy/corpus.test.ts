import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { runPolicyCases } from '../../../src/policy/index.js';

const corpus = fileURLToPath(new URL('../../policy-corpus/cases.jsonl', import.meta.url));

it('the policy corpus: every case decides as expected', { timeout: 120_000 }, async () => {
  const report = await runPolicyCases(corpus);
  const failures = report.results
    .filter((r) => !r.ok)
    .map((r) => `${r.id}: expected ${r.expect}, got ${r.got.decision} (${r.got.rule}: ${r.got.reason})`);
  expect(report.results.length).toBeGreaterThanOrEqual(150);
  expect(failures).toEqual([]);
  expect(report.failed).toBe(0);
});
