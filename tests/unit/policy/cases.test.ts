import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runPolicyCases } from '../../../src/tools/evaluate.js';

const dir = mkdtempSync(join(tmpdir(), 'kiln-cases-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

it('reports mismatches and honours --policy', async () => {
  const file = join(dir, 'cases.jsonl');
  writeFileSync(
    file,
    [
      { id: 'ok', tool: 'read_file', input: { path: 'src/a.ts' }, expect: 'allow', setup: { files: { 'src/a.ts': 'x' } } },
      { id: 'wrong', tool: 'run_command', input: { command: 'curl x' }, expect: 'allow' },
      { id: 'make', tool: 'run_command', input: { command: 'make test' }, expect: 'allow' },
    ]
      .map((c) => JSON.stringify(c))
      .join('\n'),
  );
  const plain = await runPolicyCases(file);
  expect(plain.results.map((r) => [r.id, r.ok])).toEqual([
    ['ok', true],
    ['wrong', false],
    ['make', false],
  ]);
  expect(plain).toMatchObject({ passed: 1, failed: 2 });

  const policy = join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({ commands: { allow: ['make test'] } }));
  const withPolicy = await runPolicyCases(file, { policyFile: policy });
  expect(withPolicy).toMatchObject({ passed: 2, failed: 1 });
});
