import { afterEach, beforeEach, expect, it } from 'vitest';
import { policyCheck } from '../../../src/cli/actions/policy.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
beforeEach(() => {
  repo = tempRepo();
  repo.file('src/app.ts');
});
afterEach(() => repo.cleanup());

const check = async (command: string, extra: { json?: boolean; explain?: boolean } = {}) => {
  const lines: string[] = [];
  await policyCheck({ workspace: repo.dir, tool: 'run_command', input: JSON.stringify({ command, reason: 'r' }), mode: 'default', ...extra }, (s) =>
    lines.push(s),
  );
  return lines;
};

it('kiln policy check --explain shows the structure behind a refusal: the tree and the assembled program name', async () => {
  const lines = await check('X=cu; Y=rl; $X$Y https://x', { explain: true });
  expect(lines[0]).toMatch(/^deny {2}command\.obfuscated {2}The program name \$X\$Y is assembled/);
  expect(lines).toContain('syntax tree:');
  expect(lines.some((l) => /\(command name: \(command_name \(concatenation \(simple_expansion/.test(l))).toBe(true);
  expect(lines).toContain('  command: program "$X$Y"{dynamic,assembled}; arg "https://x"');
});

it('without --explain the output is the decision and its segments only; --json carries the explanation as a field', async () => {
  const plain = await check('ls src', {});
  expect(plain.some((l) => l.startsWith('syntax tree'))).toBe(false);
  const [json] = await check('ls src', { json: true, explain: true });
  const d = JSON.parse(json!) as { decision: string; explain: string[] };
  expect(d.decision).toBe('allow');
  expect(d.explain).toContain('  command: program "ls"; arg "src"');
});
