import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { judgeRead, judgeWrite } from '../../../src/policy/files.js';
import { resolveWorkspacePath } from '../../../src/policy/index.js';
import { readFile } from '../../../src/tools/read-file.js';
import { applyEdit } from '../../../src/tools/edit.js';
import { tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
beforeEach(() => {
  repo = tempRepo();
  repo.file('src/app.ts');
});
afterEach(() => repo.cleanup());

describe('resolveWorkspacePath', () => {
  it('resolves relative and absolute paths inside the worktree', () => {
    expect(resolveWorkspacePath(repo.dir, 'src/app.ts')).toEqual({ ok: true, abs: join(repo.dir, 'src/app.ts'), rel: 'src/app.ts' });
    expect(resolveWorkspacePath(repo.dir, join(repo.dir, 'src/app.ts'))).toMatchObject({ ok: true, rel: 'src/app.ts' });
    expect(resolveWorkspacePath(repo.dir, 'src/../src/app.ts')).toMatchObject({ ok: true, rel: 'src/app.ts' });
    expect(resolveWorkspacePath(repo.dir, 'new/dir/file.ts')).toMatchObject({ ok: true, rel: 'new/dir/file.ts' });
  });

  it('refuses .. escapes, absolute paths outside, a sibling sharing the prefix and NUL bytes', () => {
    expect(resolveWorkspacePath(repo.dir, '../x')).toMatchObject({ ok: false, rule: 'path.outside-workspace' });
    expect(resolveWorkspacePath(repo.dir, '/etc/passwd')).toMatchObject({ ok: false, rule: 'path.outside-workspace' });
    expect(resolveWorkspacePath(repo.dir, `${repo.dir}-evil/x`)).toMatchObject({ ok: false, rule: 'path.outside-workspace' });
    expect(resolveWorkspacePath(repo.dir, 'src/a\0.ts')).toMatchObject({ ok: false, rule: 'path.invalid' });
  });

  it('follows real symlinks: out is out, in is in', () => {
    repo.link('out', '/etc');
    repo.link('alias.ts', 'src/app.ts');
    repo.link('dangling', '/nonexistent-kiln/x');
    expect(resolveWorkspacePath(repo.dir, 'out/passwd')).toMatchObject({ ok: false, rule: 'path.symlink-escape' });
    expect(resolveWorkspacePath(repo.dir, 'out/not-yet-there')).toMatchObject({ ok: false });
    expect(resolveWorkspacePath(repo.dir, 'dangling')).toMatchObject({ ok: false, rule: 'path.symlink-escape' });
    expect(resolveWorkspacePath(repo.dir, 'alias.ts')).toMatchObject({ ok: true, rel: 'src/app.ts' });
  });

  it('applies .. after a symlinked directory to its real parent, as the kernel does', () => {
    const outside = `${repo.dir}-outside`;
    mkdirSync(join(outside, 'deep'), { recursive: true });
    repo.link('d', join(outside, 'deep'));
    try {
      // lexically d/../src/app.ts is inside; physically it is <outside>/src/app.ts
      expect(resolveWorkspacePath(repo.dir, 'd/../src/app.ts')).toMatchObject({ ok: false });
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('accepts a worktree given through a symlink to it', () => {
    const via = `${repo.dir}-link`;
    repo.link('../' + via.split('/').pop()!, repo.dir);
    onTestFinished(() => rmSync(via, { force: true }));
    expect(resolveWorkspacePath(via, 'src/app.ts')).toMatchObject({ ok: true, rel: 'src/app.ts' });
    expect(resolveWorkspacePath(via, join(via, 'src/app.ts'))).toMatchObject({ ok: true, rel: 'src/app.ts' });
  });
});

describe('one resolver for the policy and the tools', () => {
  let outside: string;
  beforeEach(() => {
    outside = `${repo.dir}-outside`;
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'SECRET\n');
    onTestFinished(() => rmSync(outside, { recursive: true, force: true }));
  });

  it('a symlinked directory leading out of the worktree is refused by the policy and by the tools alike', async () => {
    repo.link('docs', outside);
    const ctx = repo.ctx();
    expect(judgeRead(ctx, 'docs/secret.txt')).toMatchObject({ decision: 'deny', rule: 'path.symlink-escape' });
    expect(judgeWrite(ctx, 'docs/new.md', 'create_file')).toMatchObject({ decision: 'deny', rule: 'path.symlink-escape' });
    const read = readFile(repo.dir, { path: 'docs/secret.txt' });
    expect(read.ok).toBe(false);
    expect(read.content).not.toContain('SECRET');
    expect(read.content).toBe('docs/secret.txt leads outside the workspace through a symlink');
    expect((await applyEdit(repo.dir, 'create_file', { path: 'docs/new.md', content: 'x' })).ok).toBe(false);
    expect(readdirSync(outside)).toEqual(['secret.txt']);
  });

  it('the same shape inside the worktree is allowed by both: a symlinked directory leading to src/', async () => {
    repo.link('docs', join(repo.dir, 'src'));
    const ctx = repo.ctx();
    expect(judgeRead(ctx, 'docs/app.ts')).toMatchObject({ decision: 'allow', rel: 'src/app.ts' });
    expect(readFile(repo.dir, { path: 'docs/app.ts' })).toMatchObject({ ok: true });
    expect((await applyEdit(repo.dir, 'create_file', { path: 'docs/new.ts', content: 'x\n' })).ok).toBe(true);
    expect(readdirSync(join(repo.dir, 'src')).sort()).toEqual(['app.ts', 'new.ts']);
  });
});
