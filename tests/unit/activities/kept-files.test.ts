/**
 * The conversation and the run record are read on every turn and kept parsed between turns.
 * What the user (or another worker) does to the file must win over the kept copy.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJson, readJsonKept, writeJsonKept, writeTextAtomic } from '../../../src/store/run-files.js';
import { SYNC_IO_MAX_BYTES } from '../../../src/store/sync-io.js';

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

  it('writes a small file before the event loop turns, a large one through the thread pool; both read back whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-kept-'));
    const small = join(dir, 'small.json');
    const writing = writeTextAtomic(small, '{"turn":1}');
    // synchronous: in place before anything else runs
    expect(readFileSync(small, 'utf8')).toBe('{"turn":1}');
    await writing;
    // the bound is on bytes: 60,000 bytes of two-byte characters are small
    const accented = join(dir, 'accented.json');
    const accentedWrite = writeTextAtomic(accented, `"${'é'.repeat(30_000)}"`);
    expect(readFileSync(accented, 'utf8')).toHaveLength(30_002);
    await accentedWrite;

    const big = join(dir, 'conversation.json');
    const value = { messages: ['é'.repeat(SYNC_IO_MAX_BYTES)] };
    const pending = writeJsonKept(big, value);
    // past the bound (UTF-8 bytes, not characters): the event loop is not held for it
    expect(existsSync(big)).toBe(false);
    await pending;
    expect(await readJsonKept(big)).toEqual(value);
    // another process's large file is read afresh, through the pool
    writeFileSync(`${big}.other`, JSON.stringify({ messages: ['x'.repeat(SYNC_IO_MAX_BYTES * 2)] }));
    renameSync(`${big}.other`, big);
    expect((await readJsonKept<typeof value>(big))!.messages[0]).toHaveLength(SYNC_IO_MAX_BYTES * 2);
    expect((await readJson<typeof value>(big))!.messages[0]).toHaveLength(SYNC_IO_MAX_BYTES * 2);
    expect(await readJson(join(dir, 'none.json'))).toBeUndefined();
    expect(readdirSync(dir).sort()).toEqual(['accented.json', 'conversation.json', 'small.json']);
  });
});
