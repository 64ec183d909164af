/**
 * The conversation and the run record are read on every turn and kept parsed between turns.
 * What the user (or another worker) does to the file must win over the kept copy.
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonKept, writeJsonKept } from '../../../src/store/run-files.js';

describe('kept JSON files', () => {
  it('reuses the parsed value while the file is the one written, and reads what replaced it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kiln-kept-')), 'conversation.json');
    expect(await readJsonKept(file)).toBeUndefined();
    await writeJsonKept(file, { turn: 1, messages: ['a'] });
    const first = await readJsonKept<{ turn: number }>(file);
    expect(first).toEqual({ turn: 1, messages: ['a'] });
    expect(await readJsonKept(file)).toBe(first);

    // another process rewrites it the same size: a new file, so a new value
    writeFileSync(`${file}.other`, JSON.stringify({ turn: 2, messages: ['b'] }));
    renameSync(`${file}.other`, file);
    expect(await readJsonKept(file)).toEqual({ turn: 2, messages: ['b'] });

    // rewritten in place (same inode), longer
    writeFileSync(file, JSON.stringify({ turn: 3, messages: ['c', 'd'] }));
    expect(await readJsonKept(file)).toEqual({ turn: 3, messages: ['c', 'd'] });

    // set aside (a lost host's conversation): gone, not the kept copy
    renameSync(file, `${file}.lost`);
    expect(await readJsonKept(file)).toBeUndefined();
  });

  it('is frozen, so a caller cannot make it differ from its file', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kiln-kept-')), 'run.json');
    await writeJsonKept(file, { input: { goal: 'g' }, checks: ['npm test'] });
    const v = (await readJsonKept<{ input: { goal: string }; checks: string[] }>(file))!;
    expect(() => (v.input.goal = 'other')).toThrow(TypeError);
    expect(() => v.checks.push('rm -rf /')).toThrow(TypeError);
    expect(await readJsonKept(file)).toEqual({ input: { goal: 'g' }, checks: ['npm test'] });
  });
});
