import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { runPolicyCases } from '../../../src/tools/evaluate.js';

const corpus = fileURLToPath(new URL('../../policy-corpus/cases.jsonl', import.meta.url));

it('the policy corpus: every case decides as expected', { timeout: 120_000 }, async () => {
  const report = await runPolicyCases(corpus);
  const failures = report.results.filter((r) => !r.ok).map((r) => `${r.id}: expected ${r.expect}, got ${r.got.decision} (${r.got.rule}: ${r.got.reason})`);
  expect(report.results.length).toBeGreaterThanOrEqual(150);
  expect(failures).toEqual([]);
  expect(report.failed).toBe(0);
});

it('a policy that refuses everything fails the corpus (its allow cases are real)', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-refuse-all-'));
  try {
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ writeAllow: [], commands: { deny: ['*'] } }));
    const report = await runPolicyCases(corpus, { policyFile });
    // the repository's checks and cases carrying their own inline policy aside, every command the corpus runs must fail
    const allowCommands = report.results.filter(
      (r) => r.expect === 'allow' && r.got.segments !== undefined && !['command.check', 'command.user-allow'].includes(r.got.rule),
    );
    expect(allowCommands.length).toBeGreaterThanOrEqual(100);
    // every command the corpus expects to run is refused, so each of those cases fails
    expect(allowCommands.filter((r) => r.ok).map((r) => r.id)).toEqual([]);
    expect(report.failed).toBeGreaterThanOrEqual(allowCommands.length);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
