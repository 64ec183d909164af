/**
 * A command run with workspaceReadOnly cannot change the worktree, by any path to it: the kernel
 * refuses the write (the look after such a command is left out on the strength of this).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(cleanupTempDirs);

/** every file of the worktree with its content and mode, to compare before and after */
function contents(ws: string): string {
  return execFileSync('sh', ['-c', 'find . -print0 | sort -z | xargs -0 stat -c "%n %a %s %Y"'], { cwd: ws, encoding: 'utf8' });
}

function worktree(): string {
  const ws = tempDir('ro-ws');
  writeFileSync(join(ws, 'a.txt'), 'alpha\n');
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'src', 'b.ts'), 'export const b = 1;\n');
  return ws;
}

describe('the worktree, read-only for a command', () => {
  test('attack: writes by every route fail and leave it as it was; control: it reads, and /tmp and HOME take writes', async () => {
    const ws = worktree();
    const before = contents(ws);
    const attempts = [
      'echo x > new.txt',
      'echo x >> a.txt',
      'touch a.txt',
      'mkdir made',
      'rm src/b.ts',
      'mv a.txt moved.txt',
      'chmod 777 a.txt',
      'ln -s /etc/passwd link',
      'echo x > /proc/self/cwd/via-proc.txt',
      `echo x > "${ws}/absolute.txt"`,
      'cp a.txt copy.txt',
      'truncate -s 0 a.txt',
    ];
    const script = [
      ...attempts.map((c, i) => `(${c}) 2>/dev/null && echo "wrote:${i}" || echo "refused:${i}"`),
      'cat a.txt src/b.ts',
      'echo tmp > /tmp/t && cat /tmp/t',
      'echo home > "$HOME/h" && cat "$HOME/h"',
    ].join('\n');
    const r = await sandbox.run(script, { workspace: ws, workspaceReadOnly: true, timeoutMs: 15_000 });
    expect(r.workspaceReadOnly).toBe(true);
    for (let i = 0; i < attempts.length; i++) expect(r.output).toContain(`refused:${i}`);
    expect(r.output).not.toMatch(/wrote:/);
    expect(r.output).toContain('alpha\nexport const b = 1;\ntmp\nhome\n');
    expect(contents(ws)).toBe(before);
  });

  test('attack: no writable mount leads to a worktree file: a hard link from the cache into it cannot be made (EXDEV)', async () => {
    const ws = worktree();
    const cacheDir = tempDir('ro-cache');
    // in a writable run, the one place a command could keep a second name for a worktree file
    const r = await sandbox.run('ln a.txt /tmp/kiln-cache/alias 2>&1; echo "ln:$?"', {
      workspace: ws,
      cacheDir,
      timeoutMs: 15_000,
    });
    expect(r.output).toMatch(/ln:[1-9]/);
    expect(r.output).toMatch(/Invalid cross-device link/);
    expect(existsSync(join(cacheDir, 'alias'))).toBe(false);
    // control: the cache itself takes writes
    const w = await sandbox.run('echo c > /tmp/kiln-cache/c && cat /tmp/kiln-cache/c', { workspace: ws, cacheDir, workspaceReadOnly: true, timeoutMs: 15_000 });
    expect(w.output).toBe('c\n');
  });

  test('control: without it, the same command writes, and the result does not claim otherwise', async () => {
    const ws = worktree();
    const r = await sandbox.run('echo x > new.txt', { workspace: ws, timeoutMs: 15_000 });
    expect(r.exitCode).toBe(0);
    expect(r.workspaceReadOnly).toBeUndefined();
    expect(readFileSync(join(ws, 'new.txt'), 'utf8')).toBe('x\n');
  });

  test('unsandboxed, nothing holds the worktree read-only, and the result says so', async () => {
    const off = await createSandbox({ mode: 'off' });
    const ws = worktree();
    const r = await off.run('echo x > new.txt', { workspace: ws, workspaceReadOnly: true, timeoutMs: 15_000 });
    expect(r.workspaceReadOnly).toBeUndefined();
    expect(existsSync(join(ws, 'new.txt'))).toBe(true);
  });
});
