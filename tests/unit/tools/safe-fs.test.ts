import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyEdit, fileHash } from '../../../src/tools/edit.js';
import { readFile } from '../../../src/tools/read-file.js';
import { isInside, workspaceTarget, safeWriteFile } from '../../../src/tools/safe-fs.js';
import { removeTemp, tempRepo } from './fixture.js';

let ws: string;
let parent: string;
let outsideFile: string;
let outsideDir: string;

beforeEach(() => {
  ({ dir: ws, parent } = tempRepo({ 'src/a.ts': 'export const a = 1;\n' }));
  outsideDir = path.join(parent, 'outside');
  fs.mkdirSync(outsideDir);
  outsideFile = path.join(outsideDir, 'secret.txt');
  fs.writeFileSync(outsideFile, 'SECRET\n');
});
afterEach(() => removeTemp(parent));

const outsideUnchanged = () => {
  expect(fs.readFileSync(outsideFile, 'utf8')).toBe('SECRET\n');
  expect(fs.readdirSync(outsideDir)).toEqual(['secret.txt']);
};

describe('path checks', () => {
  it('rejects absolute paths, .. escapes and NUL', () => {
    expect(readFile(ws, { path: outsideFile }).content).toContain('is absolute');
    expect(readFile(ws, { path: '../outside/secret.txt' }).content).toContain('escapes the workspace');
    expect(readFile(ws, { path: 'src/../../outside/secret.txt' }).content).toContain('escapes the workspace');
    expect(readFile(ws, { path: 'src/a.ts\0x' }).content).toContain('NUL');
    expect(readFile(ws, { path: 'src/../src/a.ts' }).ok).toBe(true);
  });

  it('does not take a sibling sharing the prefix (/repo-evil) for the workspace', async () => {
    expect(isInside('/tmp/x/repo', '/tmp/x/repo-evil/f')).toBe(false);
    expect(isInside('/tmp/x/repo', '/tmp/x/repo/f')).toBe(true);
    const evil = path.join(parent, 'repo-evil');
    fs.mkdirSync(evil);
    fs.writeFileSync(path.join(evil, 'f.txt'), 'EVIL\n');
    expect(readFile(ws, { path: '../repo-evil/f.txt' }).content).toContain('escapes the workspace');
    fs.symlinkSync(evil, path.join(ws, 'ev'));
    expect(readFile(ws, { path: 'ev/f.txt' }).ok).toBe(false);
    const w = await applyEdit(ws, 'create_file', { path: 'ev/g.txt', content: 'x' });
    expect(w.ok).toBe(false);
    expect(fs.readdirSync(evil)).toEqual(['f.txt']);
  });

  it('gives the relative path back with forward slashes', () => {
    expect(workspaceTarget(ws, './src//a.ts').rel).toBe('src/a.ts');
  });
});

describe('a symlink to a file outside', () => {
  beforeEach(() => fs.symlinkSync(outsideFile, path.join(ws, 'src/link.txt')));

  it('is not read', async () => {
    const r = readFile(ws, { path: 'src/link.txt' });
    expect(r.ok).toBe(false);
    expect(r.content).toContain('symbolic link');
    expect(r.content).not.toContain('SECRET');
    await expect(fileHash(ws, 'src/link.txt')).rejects.toThrow(/symbolic link/);
  });

  it('is not written through by edit, create_file or a direct write', async () => {
    const e = await applyEdit(ws, 'edit', { path: 'src/link.txt', old_string: 'SECRET', new_string: 'PWNED' });
    expect(e.ok).toBe(false);
    const c = await applyEdit(ws, 'create_file', { path: 'src/link.txt', content: 'PWNED' });
    expect(c.ok).toBe(false);
    expect(() => safeWriteFile(ws, 'src/link.txt', 'PWNED')).toThrow(/symbolic link/);
    outsideUnchanged();
    expect(fs.lstatSync(path.join(ws, 'src/link.txt')).isSymbolicLink()).toBe(true);
  });
});

describe('a symlinked directory escaping the workspace', () => {
  beforeEach(() => fs.symlinkSync(outsideDir, path.join(ws, 'vendor')));

  it('is not read through', () => {
    const r = readFile(ws, { path: 'vendor/secret.txt' });
    expect(r).toEqual({ ok: false, content: 'vendor/secret.txt leads outside the workspace through a symlink' });
  });

  it('is not written through, nor are directories created beyond it', async () => {
    expect((await applyEdit(ws, 'edit', { path: 'vendor/secret.txt', old_string: 'SECRET', new_string: 'PWNED' })).ok).toBe(false);
    expect((await applyEdit(ws, 'create_file', { path: 'vendor/new.txt', content: 'x' })).ok).toBe(false);
    expect((await applyEdit(ws, 'create_file', { path: 'vendor/deep/er/new.txt', content: 'x' })).ok).toBe(false);
    outsideUnchanged();
  });
});

describe('symlinks that stay inside', () => {
  it('a directory link inside the workspace is followed; a file link names its target', () => {
    fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'lib'));
    expect(readFile(ws, { path: 'lib/a.ts' }).ok).toBe(true);
    fs.symlinkSync('a.ts', path.join(ws, 'src/alias.ts'));
    expect(readFile(ws, { path: 'src/alias.ts' }).content).toBe('src/alias.ts is a symbolic link; read its target src/a.ts instead');
  });
});

describe('writes', () => {
  it('never touch .git', async () => {
    const r = await applyEdit(ws, 'create_file', { path: '.git/hooks/pre-commit', content: '#!/bin/sh\ncurl evil\n' });
    expect(r).toMatchObject({ ok: false, content: expect.stringContaining('.git') });
    expect(fs.existsSync(path.join(ws, '.git/hooks/pre-commit'))).toBe(false);
  });

  it('leave no temporary files behind', async () => {
    await applyEdit(ws, 'edit', { path: 'src/a.ts', old_string: '1', new_string: '2' });
    expect(fs.readdirSync(path.join(ws, 'src'))).toEqual(['a.ts']);
  });
});
