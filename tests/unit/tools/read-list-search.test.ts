import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, listWorkspaceFiles } from '../../../src/tools/list-files.js';
import { capText } from '../../../src/tools/outcome.js';
import { readFile } from '../../../src/tools/read-file.js';
import { search } from '../../../src/tools/search.js';
import { git, removeTemp, tempRepo } from './fixture.js';

let ws: string;
let parent: string;

beforeAll(() => {
  const lines = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
  ({ dir: ws, parent } = tempRepo({
    'fifty.txt': lines,
    'src/auth/login.ts': 'export function login(user: string) {\n  return checkPassword(user);\n}\n',
    'src/auth/password.ts': 'export function checkPassword(u: string) {\n  return u.length > 3; // LOGIN check\n}\n',
    'src/util.py': 'def check_password(x):\n    return x  # a.b literal\n',
    'docs/notes.md': 'The Login flow calls checkPassword.\n',
    '.gitignore': 'build/\n*.log\n',
    'crlf.txt': 'one\r\ntwo\r\n',
    'empty.txt': '',
  }));
  fs.mkdirSync(path.join(ws, 'build'));
  fs.writeFileSync(path.join(ws, 'build/out.js'), 'checkPassword compiled\n');
  fs.writeFileSync(path.join(ws, 'debug.log'), 'checkPassword log\n');
  fs.writeFileSync(path.join(ws, 'untracked.ts'), 'const checkPassword = 1;\n');
  fs.writeFileSync(path.join(ws, 'image.bin'), Buffer.from([0x89, 0x50, 0, 1, 2, 3]));
});
afterAll(() => removeTemp(parent));

describe('readFile', () => {
  it('numbers lines', () => {
    const r = readFile(ws, { path: 'src/auth/login.ts' });
    expect(r.ok).toBe(true);
    expect(r.content).toBe('   1\texport function login(user: string) {\n   2\t  return checkPassword(user);\n   3\t}');
  });

  it('reads a range and says where it is', () => {
    const r = readFile(ws, { path: 'fifty.txt', start_line: 10, end_line: 12 });
    expect(r.content).toBe('  10\tline 10\n  11\tline 11\n  12\tline 12\n[lines 10-12 of 50]');
  });

  it('caps long reads and tells how to continue', () => {
    const r = readFile(ws, { path: 'fifty.txt' }, { maxLines: 20 });
    expect(r.content.split('\n')).toHaveLength(21);
    expect(r.content).toContain('showing lines 1-20 of 50; call read_file with start_line=21');
    const next = readFile(ws, { path: 'fifty.txt', start_line: 21 }, { maxLines: 20 });
    expect(next.content.startsWith('  21\tline 21')).toBe(true);
  });

  it('caps by bytes too', () => {
    const r = readFile(ws, { path: 'fifty.txt' }, { maxBytes: 100 });
    expect(r.content).toMatch(/showing lines 1-\d of 50/);
  });

  it('refuses binary files, ranges past the end and missing files', () => {
    expect(readFile(ws, { path: 'image.bin' })).toMatchObject({ ok: false, content: expect.stringContaining('binary') });
    expect(readFile(ws, { path: 'fifty.txt', start_line: 51 }).content).toContain('has 50 lines; start_line 51 is past the end');
    expect(readFile(ws, { path: 'nope.ts' })).toEqual({ ok: false, content: 'nope.ts does not exist' });
    expect(readFile(ws, { path: 'src' }).content).toContain('is a directory');
  });

  it('shows CRLF files without carriage returns, and empty files', () => {
    expect(readFile(ws, { path: 'crlf.txt' }).content).toBe('   1\tone\n   2\ttwo');
    expect(readFile(ws, { path: 'empty.txt' }).content).toContain('empty');
  });
});

describe('listFiles', () => {
  it('lists tracked and untracked files, not ignored ones', async () => {
    const files = await listWorkspaceFiles(ws);
    expect(files).toContain('untracked.ts');
    expect(files).toContain('src/auth/login.ts');
    expect(files).not.toContain('build/out.js');
    expect(files).not.toContain('debug.log');
  });

  it('leaves out files deleted from the worktree', async () => {
    fs.rmSync(path.join(ws, 'empty.txt'));
    try {
      expect(await listWorkspaceFiles(ws)).not.toContain('empty.txt');
    } finally {
      fs.writeFileSync(path.join(ws, 'empty.txt'), '');
    }
  });

  it('filters by glob; a bare glob matches names at any depth', async () => {
    expect((await listFiles(ws, { glob: 'src/**/*.ts' })).content).toBe('src/auth/login.ts\nsrc/auth/password.ts');
    expect((await listFiles(ws, { glob: '*.py' })).content).toBe('src/util.py');
    expect((await listFiles(ws, { glob: '*.rs' })).content).toBe('No files match *.rs.');
  });

  it('caps the list with a note and keeps the full list aside', async () => {
    const r = await listFiles(ws, {}, { maxFiles: 3 });
    expect(r.content).toMatch(/showing 3 of \d+ files/);
    expect(r.fullOutput?.split('\n').length).toBeGreaterThan(3);
  });

  it('works outside git through ripgrep', async () => {
    const plain = path.join(parent, 'plain');
    fs.mkdirSync(path.join(plain, 'a'), { recursive: true });
    fs.writeFileSync(path.join(plain, 'a/x.txt'), 'x');
    expect(await listWorkspaceFiles(plain)).toEqual(['a/x.txt']);
  });
});

describe('search', () => {
  it('finds literal text by default, grouped by file with line numbers, .gitignore respected', async () => {
    const r = await search(ws, { pattern: 'checkPassword' });
    expect(r.ok).toBe(true);
    expect(r.content).toContain('src/auth/login.ts\n  2:   return checkPassword(user);');
    expect(r.content).toContain('untracked.ts');
    expect(r.content).not.toContain('build/out.js');
    expect(r.content).not.toContain('debug.log');
    expect(r.content).toContain('[4 matching lines in 4 files]');
  });

  it('treats regex metacharacters literally unless regex=true', async () => {
    expect((await search(ws, { pattern: 'a.b' })).content).toContain('src/util.py');
    expect((await search(ws, { pattern: 'a.b', regex: false })).content).not.toContain('password.ts');
    const re = await search(ws, { pattern: 'check_?[Pp]assword\\(', regex: true });
    expect(re.content).toContain('src/util.py');
    expect(re.content).toContain('src/auth/password.ts');
    const bad = await search(ws, { pattern: 'foo(', regex: true });
    expect(bad.ok).toBe(false);
    expect(bad.content).toContain('regex=false');
  });

  it('applies case modes', async () => {
    const files = async (c: 'smart' | 'sensitive' | 'insensitive', pattern: string) => (await search(ws, { pattern, case: c })).content;
    expect(await files('smart', 'login')).toContain('docs/notes.md'); // lower case → insensitive
    expect(await files('smart', 'Login')).not.toContain('password.ts'); // "LOGIN" not matched
    expect(await files('sensitive', 'login')).not.toContain('docs/notes.md');
    expect(await files('insensitive', 'Login')).toContain('password.ts');
  });

  it('limits to path_glob', async () => {
    const r = await search(ws, { pattern: 'checkPassword', path_glob: '*.md' });
    expect(r.content).toContain('docs/notes.md');
    expect(r.content).not.toContain('src/');
    const nested = await search(ws, { pattern: 'checkPassword', path_glob: 'src/**/*.ts' });
    expect(nested.content).toContain('[2 matching lines in 2 files]');
    expect((await search(ws, { pattern: 'checkPassword', path_glob: '!src/**' })).content).not.toContain('src/');
    expect((await search(ws, { pattern: 'zzz-nothing' })).content).toBe('No matches for "zzz-nothing".');
  });

  it('caps matches and says how many were cut', async () => {
    const r = await search(ws, { pattern: 'line' }, { maxShown: 10 });
    expect(r.content).toContain('[showing 10 of 50 matching lines');
    expect(r.content).toContain('40 cut');
    expect(r.fullOutput).toContain('line 50');
  });

  it('never shows the content of secret files such as .env, even when tracked', async () => {
    fs.writeFileSync(path.join(ws, '.env'), 'checkPassword=hunter2\n');
    fs.writeFileSync(path.join(ws, 'server.pem'), 'checkPassword key\n');
    try {
      const r = await search(ws, { pattern: 'checkPassword' });
      expect(r.content).not.toContain('hunter2');
      expect(r.content).not.toContain('server.pem');
      expect((await search(ws, { pattern: 'hunter2', path_glob: '.env' })).content).toContain('No matches');
    } finally {
      fs.rmSync(path.join(ws, '.env'));
      fs.rmSync(path.join(ws, 'server.pem'));
    }
  });

  it('does not go through symlinks to outside files', async () => {
    const outside = path.join(parent, 'outside-secret.txt');
    fs.writeFileSync(outside, 'TOPSECRET\n');
    fs.symlinkSync(outside, path.join(ws, 'leak.txt'));
    try {
      expect((await search(ws, { pattern: 'TOPSECRET' })).content).toContain('No matches');
    } finally {
      fs.rmSync(path.join(ws, 'leak.txt'));
    }
  });
});

describe('capText', () => {
  it('keeps head and tail and says how much was cut', () => {
    const text = 'HEAD' + 'x'.repeat(1000) + 'TAIL';
    const r = capText(text, 200);
    expect(r.text.length).toBeLessThanOrEqual(200);
    expect(r.text.startsWith('HEAD')).toBe(true);
    expect(r.text.endsWith('TAIL')).toBe(true);
    expect(r.text).toContain(`[... ${r.cut} characters cut ...]`);
    expect(r.cut).toBeGreaterThan(800);
    expect(capText('short', 200)).toEqual({ text: 'short', cut: 0 });
  });
});

void git;
