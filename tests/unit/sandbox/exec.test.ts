import { afterAll, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runSandboxExec, shellJoin, shellQuote } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir, uniqueMarker, survivors } from './helpers.js';

afterAll(cleanupTempDirs);

function collect() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) }, out, err };
}

test('returns the exit code of the command and streams its output', async () => {
  const ws = tempDir('ws');
  const { io, out } = collect();
  const code = await runSandboxExec({ workspace: ws, command: ['sh', '-c', 'echo from-exec; echo written > f.txt; exit 5'] }, io);
  expect(code).toBe(5);
  expect(out.join('')).toBe('from-exec\n');
  expect(readFileSync(join(ws, 'f.txt'), 'utf8')).toBe('written\n');
});

test('returns 124 on timeout, like timeout(1), and leaves no process behind', async () => {
  const marker = uniqueMarker('exec');
  const { io, err } = collect();
  const code = await runSandboxExec({ workspace: tempDir('ws'), timeoutMs: 1000, command: ['sh', '-c', `sleep 1000 # ${marker}`] }, io);
  expect(code).toBe(124);
  expect(err.join('')).toMatch(/timed out after 1000 ms/);
  expect(survivors(marker)).toEqual([]);
});

test('arguments reach the command exactly, whatever they contain', async () => {
  const args = ['plain', 'with space', "it's", '"dq"', '$HOME', '`id`', 'a;b', '', '*', 'new\nline', '\\back'];
  const { io, out } = collect();
  const code = await runSandboxExec({ workspace: tempDir('ws'), command: ['node', '-e', 'console.log(JSON.stringify(process.argv.slice(1)))', ...args] }, io);
  expect(code).toBe(0);
  expect(JSON.parse(out.join(''))).toEqual(args);
});

test('shellQuote round-trips through a real shell', () => {
  for (const word of ["it's", 'a b', '', "''", '$(x)', '-n', 'é', "'\\''"]) {
    expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(word)}`], { encoding: 'utf8' })).toBe(word);
  }
  expect(shellJoin(['ls', '-la', 'my dir'])).toBe("ls -la 'my dir'");
});
