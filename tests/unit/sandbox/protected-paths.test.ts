/**
 * The protected set is held by the kernel, not by the policy's reading of a command: whatever a
 * command does to write a test, a runner config or a file in a protected folder, it fails with
 * EROFS (or EBUSY for a rename or removal over one). Controls: the product code beside them stays
 * writable, and so does a new file, also beside a test (the verifier never takes one: it verifies
 * the base's protected paths).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../../src/sandbox/index.js';
import type { Sandbox } from '../../../src/sandbox/types.js';

let sandbox: Sandbox;
let ws: string;
const protectedPaths = () => ['test/a.test.js', 'Makefile', 'src/ring.test.js', '.kiln'].map((p) => join(ws, p));

beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});

function worktree(): string {
  ws = mkdtempSync(join(tmpdir(), 'kiln-protected-'));
  mkdirSync(join(ws, 'test'));
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'test', 'a.test.js'), 'original test\n');
  writeFileSync(join(ws, 'src', 'ring.test.js'), 'original test\n');
  writeFileSync(join(ws, 'src', 'ring.js'), 'original code\n');
  writeFileSync(join(ws, 'Makefile'), 'check:\n\tnode --test\n');
  return ws;
}

const WRITES: Array<[string, string]> = [
  ['a redirection', 'echo pwned > test/a.test.js'],
  ['an interpreter', `python3 -c "open('test/a.test.js','w').write('pwned')"`],
  ['node', `node -e "require('fs').writeFileSync('src/ring.test.js','pwned')"`],
  ['sed -i through a variable', 'f=Make; sed -i s/node/true/ ${f}file'],
  ['a rename over it', 'echo pwned > /tmp/x && mv /tmp/x test/a.test.js'],
  ['removing it', 'rm -f src/ring.test.js'],
  ['a hard link then a write', 'ln test/a.test.js link && echo pwned > link'],
];

describe('protected paths are read-only in the sandbox', () => {
  for (const [how, command] of WRITES) {
    it(`attack: ${how} cannot change a protected path`, async () => {
      const dir = worktree();
      await sandbox.run(command, { workspace: dir, timeoutMs: 30_000, protectedPaths: protectedPaths() });
      expect(readFileSync(join(dir, 'test', 'a.test.js'), 'utf8')).toBe('original test\n');
      expect(readFileSync(join(dir, 'src', 'ring.test.js'), 'utf8')).toBe('original test\n');
      expect(readFileSync(join(dir, 'Makefile'), 'utf8')).toContain('node --test');
    });
  }

  it('control: product code, new files and a new file beside a test (bytecode, an output) stay writable', async () => {
    const dir = worktree();
    const res = await sandbox.run(
      'echo fixed > src/ring.js && echo new > src/helper.js && mkdir -p docs test/__pycache__ && echo x > docs/x.md && echo b > test/__pycache__/a.pyc',
      {
        workspace: dir,
        timeoutMs: 30_000,
        protectedPaths: protectedPaths(),
      },
    );
    expect(res.exitCode, res.output).toBe(0);
    expect(readFileSync(join(dir, 'src', 'ring.js'), 'utf8')).toBe('fixed\n');
    expect(readFileSync(join(dir, 'src', 'helper.js'), 'utf8')).toBe('new\n');
  });

  it('a protected path that is a symlink is not bound (its target could be anywhere), and the run still starts', async () => {
    const dir = worktree();
    symlinkSync('/etc', join(dir, 'tests'));
    const res = await sandbox.run('echo ok', { workspace: dir, timeoutMs: 30_000, protectedPaths: [...protectedPaths(), join(dir, 'tests')] });
    expect(res.exitCode, res.output).toBe(0);
  });
});
