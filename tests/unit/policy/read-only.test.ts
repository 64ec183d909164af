/**
 * Which commands run with the worktree read-only (and no look after them): plain readers only,
 * judged on the policy's own parse. A writer taken for a reader would fail on a read-only mount,
 * not change the worktree unseen (tests/unit/activities/read-only-commands.test.ts); these keep
 * the list from taking writers at all.
 */
import { describe, expect, it } from 'vitest';
import { defaultPolicyConfig } from '../../../src/policy/index.js';
import { evaluate } from '../../../src/tools/evaluate.js';
import { writesNothing } from '../../../src/policy/read-only.js';

async function readOnly(command: string): Promise<boolean> {
  const d = await evaluate('run_command', { command }, { workspace: '/tmp', config: defaultPolicyConfig(), mode: 'default', checks: [] });
  return writesNothing(d.segments ?? []);
}

describe('commands that only read', () => {
  it.each([
    'echo turn',
    'cat a.txt',
    'grep -rn TODO src | wc -l',
    'ls -la > /dev/null 2>&1',
    'cd src && ls',
    'git status --short',
    'git diff HEAD -- src',
    "find . -name '*.ts'",
    'cat <<EOF\nhi\nEOF',
    'echo hi >&2',
    'wc -l < a.txt',
    'X=1 cat f',
    'timeout 5 grep -r x . 2>/dev/null',
    'file a.txt',
  ])('%j reads only', async (command) => {
    expect(await readOnly(command)).toBe(true);
  });

  it.each([
    'cat a > b',
    'echo hi >> log',
    'tail a.txt >| x',
    'echo hi &> out',
    'cat 0<> f',
    'exec 3>out; echo x >&3',
    'echo $(touch y)',
    'bash -c "cat x"',
    'cat <(ls) >(tee z)',
    'find . -delete',
    'find . -name x -exec rm {} \\;',
    'find . -fprint list',
    'git diff --output=x',
    'git -C .. status',
    'git checkout -- a.txt',
    'sort -o x y',
    'sed -i s/a/b/ f',
    'tee x',
    'touch x',
    'python3 -c 1',
    'npm test',
    './run.sh',
    '/bin/cat a.txt',
    'f() { cat x; }; f',
    'file -C -m magic',
    'file -zC -m magic',
    'file --compile',
  ])('%j may write', async (command) => {
    expect(await readOnly(command)).toBe(false);
  });

  it('an empty parse is no reader', () => {
    expect(writesNothing([])).toBe(false);
  });
});
