import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyEdit, commitEdit, fileHash, prepareEdit, sha256 } from '../../../src/tools/edit.js';
import { removeTemp, tempRepo } from './fixture.js';

let ws: string;
let parent: string;
const read = (rel: string) => fs.readFileSync(path.join(ws, rel), 'utf8');

const SRC = [
  'function a() {',
  '  return 1;',
  '}',
  '',
  'function b() {',
  '  return 1;',
  '}',
  '',
  'function total(items) {',
  '\tlet sum = 0;',
  '\tfor (const i of items) sum += i.price;',
  '\treturn sum;',
  '}',
  '',
].join('\n');

beforeEach(() => {
  ({ dir: ws, parent } = tempRepo({ 'src/calc.js': SRC, 'win.txt': 'alpha\r\nbeta\r\ngamma\r\n', 'run.sh': '#!/bin/sh\necho hi\n' }));
  fs.chmodSync(path.join(ws, 'run.sh'), 0o755);
});
afterEach(() => removeTemp(parent));

describe('edit', () => {
  it('replaces a unique match and shows the result with line numbers', async () => {
    const r = await applyEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'function a() {\n  return 1;', new_string: 'function a() {\n  return 42;' });
    expect(r.ok).toBe(true);
    expect(r.content).toContain('replaced 1 occurrence in src/calc.js (lines 1-2)');
    expect(r.content).toContain('   2\t  return 42;');
    expect(read('src/calc.js')).toBe(SRC.replace('return 1;', 'return 42;'));
  });

  it('refuses several matches, naming how many and where', () => {
    const p = prepareEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'return 1;', new_string: 'return 2;', replace_all: false });
    expect(p).toEqual({ ok: false, error: expect.stringContaining('occurs 2 times in src/calc.js (starting at lines 2, 6)') });
    expect(!p.ok && p.error).toContain('replace_all=true');
  });

  it('replaces every occurrence with replace_all', async () => {
    const r = await applyEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'return 1;', new_string: 'return $&2;', replace_all: true });
    expect(r.ok).toBe(true);
    expect(read('src/calc.js').match(/return \$&2;/g)).toHaveLength(2);
  });

  it('on no match shows the lines that match up to whitespace', () => {
    const p = prepareEdit(ws, 'edit', {
      path: 'src/calc.js',
      old_string: '  let sum = 0;\n  for (const i of items) sum += i.price;',
      new_string: 'x',
      replace_all: false,
    });
    expect(p.ok).toBe(false);
    if (p.ok) return;
    expect(p.error).toContain('not found in src/calc.js');
    expect(p.error).toContain('matches lines 10-11 if whitespace is ignored');
    expect(p.error).toContain('  10\t\tlet sum = 0;');
  });

  it('on no match points at the line most like the first line of old_string', () => {
    const p = prepareEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'function totals(items) {\n  let total = 0;', new_string: 'x', replace_all: false });
    expect(!p.ok && p.error).toContain('closest match to the first line of old_string is line 9');
    expect(!p.ok && p.error).toContain('   9\tfunction total(items) {');
  });

  it('refuses identical strings, missing files and binary files', () => {
    expect(prepareEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'a', new_string: 'a', replace_all: false })).toEqual({
      ok: false,
      error: expect.stringContaining('identical'),
    });
    expect(prepareEdit(ws, 'edit', { path: 'nope.js', old_string: 'a', new_string: 'b', replace_all: false })).toEqual({
      ok: false,
      error: 'nope.js does not exist; use create_file to make a new file.',
    });
    fs.writeFileSync(path.join(ws, 'blob'), Buffer.from([1, 0, 2]));
    expect(prepareEdit(ws, 'edit', { path: 'blob', old_string: 'a', new_string: 'b', replace_all: false })).toMatchObject({ ok: false });
  });

  it('keeps CRLF line endings when the model sends LF', async () => {
    const r = await applyEdit(ws, 'edit', { path: 'win.txt', old_string: 'alpha\nbeta', new_string: 'alpha\nBETA\nbeta2' });
    expect(r.ok).toBe(true);
    expect(read('win.txt')).toBe('alpha\r\nBETA\r\nbeta2\r\ngamma\r\n');
  });

  it('keeps the mode of the file', async () => {
    await applyEdit(ws, 'edit', { path: 'run.sh', old_string: 'echo hi', new_string: 'echo bye' });
    expect(fs.statSync(path.join(ws, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(read('run.sh')).toBe('#!/bin/sh\necho bye\n');
  });
});

describe('create_file', () => {
  it('creates a new file with its directories', async () => {
    const r = await applyEdit(ws, 'create_file', { path: 'src/new/deep/mod.js', content: 'export {};\n' });
    expect(r).toMatchObject({ ok: true, content: expect.stringContaining('created src/new/deep/mod.js (1 line)') });
    expect(read('src/new/deep/mod.js')).toBe('export {};\n');
  });

  it('refuses an existing file and points to edit', () => {
    const p = prepareEdit(ws, 'create_file', { path: 'src/calc.js', content: 'x' });
    expect(p).toEqual({ ok: false, error: 'src/calc.js already exists; use edit to change an existing file (read it first).' });
    expect(read('src/calc.js')).toBe(SRC);
  });
});

describe('prepare / commit across crashes', () => {
  it('commit is idempotent and fileHash recognises the applied edit', async () => {
    const p = prepareEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'function b', new_string: 'function bee', replace_all: false });
    if (!p.ok) throw new Error(p.error);
    expect(p.before).toBe(SRC);
    expect(read('src/calc.js')).toBe(SRC); // prepare writes nothing
    expect(await fileHash(ws, 'src/calc.js')).toBe(sha256(p.before!));
    expect((await commitEdit(ws, p)).ok).toBe(true);
    expect(await fileHash(ws, 'src/calc.js')).toBe(sha256(p.after));
    expect((await commitEdit(ws, p)).ok).toBe(true); // replay after a crash
    expect(read('src/calc.js')).toBe(p.after);
  });

  it('commit refuses when the file changed since prepare', async () => {
    const p = prepareEdit(ws, 'edit', { path: 'src/calc.js', old_string: 'function b', new_string: 'function bee', replace_all: false });
    fs.appendFileSync(path.join(ws, 'src/calc.js'), '// someone else\n');
    const r = await commitEdit(ws, p);
    expect(r).toEqual({ ok: false, content: expect.stringContaining('changed since the edit was prepared') });
  });

  it('fileHash is null for a missing file; create commits once', async () => {
    expect(await fileHash(ws, 'fresh.txt')).toBeNull();
    const p = prepareEdit(ws, 'create_file', { path: 'fresh.txt', content: 'hello' });
    expect(p).toMatchObject({ ok: true, before: null, after: 'hello' });
    expect((await commitEdit(ws, p)).ok).toBe(true);
    expect((await commitEdit(ws, p)).ok).toBe(true);
    expect(read('fresh.txt')).toBe('hello');
  });
});
