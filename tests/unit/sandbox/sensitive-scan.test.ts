/**
 * The credential scan before each command reuses what an unchanged directory held (by its ctime
 * and inode, which no command can set back), so a 50,000-file worktree costs stats, not a glob
 * match per file. Whatever appears, moves or goes between two commands is still what the next
 * command's masks follow; a directory changed just before its scan is read again.
 */
import { afterAll, afterEach, expect, test, vi } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RACY_MS, sensitiveEntries } from '../../../src/sandbox/sensitive-files.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

/** the directories the scan read (listed), through node:fs as the scan uses it */
const listed = vi.hoisted(() => [] as string[]);
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  return { ...real, readdirSync: (...a: Parameters<typeof real.readdirSync>) => (listed.push(String(a[0])), real.readdirSync(...a)) };
});

afterEach(() => {
  vi.useRealTimers();
});
afterAll(cleanupTempDirs);

function worktree(): string {
  const ws = tempDir('scan');
  for (const d of ['src/a', 'src/b', 'conf']) mkdirSync(join(ws, d), { recursive: true });
  for (let i = 0; i < 50; i++) writeFileSync(join(ws, 'src', i % 2 ? 'a' : 'b', `f${i}.ts`), 'x');
  writeFileSync(join(ws, 'conf', 'settings.json'), '{}');
  return ws;
}

/** the scan as the sandbox takes it, and which directories it had to read for it */
function scan(ws: string): { files: string[]; dirs: string[]; read: string[] } {
  listed.length = 0;
  const r = sensitiveEntries(ws);
  const rel = (p: string) => p.slice(ws.length + 1) || '.';
  return { files: r.files.map(rel).sort(), dirs: r.dirs.map(rel).sort(), read: listed.map(rel).sort() };
}

/** the worker's clock RACY_MS and more past every ctime so far: those directories count as settled */
function later(): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 10 * RACY_MS);
}

test('an unchanged worktree is not read again; a credential that appears, moves or goes is seen at the next scan', () => {
  const ws = worktree();
  later();
  expect(scan(ws)).toEqual({ files: [], dirs: [], read: ['.', 'conf', 'src', 'src/a', 'src/b'] });
  expect(scan(ws).read).toEqual([]);

  writeFileSync(join(ws, 'src', 'a', '.env'), 'TOKEN=1');
  later();
  expect(scan(ws)).toMatchObject({ files: ['src/a/.env'], read: ['src/a'] });

  // a directory's mtime can be set back, to the nanosecond; its ctime cannot
  const old = statSync(join(ws, 'src', 'b'), { bigint: true }).mtimeNs;
  writeFileSync(join(ws, 'src', 'b', 'id_rsa'), 'KEY');
  execFileSync('touch', ['-m', '-d', `@${old / 1_000_000_000n}.${String(old % 1_000_000_000n).padStart(9, '0')}`, join(ws, 'src', 'b')]);
  expect(statSync(join(ws, 'src', 'b'), { bigint: true }).mtimeNs).toBe(old);
  later();
  expect(scan(ws).files).toEqual(['src/a/.env', 'src/b/id_rsa']);

  renameSync(join(ws, 'conf'), join(ws, '.aws'));
  rmSync(join(ws, 'src', 'a', '.env'));
  later();
  // a masked file that is gone must not be bound (bwrap would refuse to start)
  expect(scan(ws)).toMatchObject({ files: ['src/b/id_rsa'], dirs: ['.aws'] });
});

test('a directory changed within RACY_MS before its scan is read again at the next one, though its ctime is the same', () => {
  const ws = worktree();
  // the real clock: every directory was just made
  expect(scan(ws).read).toEqual(['.', 'conf', 'src', 'src/a', 'src/b']);
  expect(scan(ws).read).toEqual(['.', 'conf', 'src', 'src/a', 'src/b']);
  later();
  // read once more now that they are old, then trusted
  expect(scan(ws).read).toEqual(['.', 'conf', 'src', 'src/a', 'src/b']);
  expect(scan(ws).read).toEqual([]);
});

test('control: another policy on the same worktree gets its own scan', () => {
  const ws = worktree();
  writeFileSync(join(ws, 'conf', 'local.secret'), 'S');
  later();
  expect(scan(ws).files).toEqual([]);
  listed.length = 0;
  const withGlob = sensitiveEntries(ws, { sensitive: ['**/*.secret'], allowSensitive: [] });
  expect(withGlob.files.map((p) => p.slice(ws.length + 1))).toEqual(['conf/local.secret']);
  expect(listed.length).toBe(5);
});
