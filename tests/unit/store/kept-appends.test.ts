/**
 * Lines appended through a kept fd land where appendFile would put them: in order, and at the
 * path's file even when the file was removed, replaced or moved away since the fd was opened.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendKept } from '../../../src/store/kept-appends.js';
import { SYNC_IO_MAX_BYTES } from '../../../src/store/sync-io.js';

const dir = mkdtempSync(join(tmpdir(), 'kiln-kept-appends-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** the fds of this process open on `path` */
function fdsOn(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;
}

describe('appends through a kept fd', () => {
  test('control: lines asked for at once land whole and in order', async () => {
    const file = join(dir, 'order.jsonl');
    await Promise.all(Array.from({ length: 200 }, (_, i) => appendKept(file, `${i}\n`)));
    expect(readFileSync(file, 'utf8')).toBe(Array.from({ length: 200 }, (_, i) => `${i}\n`).join(''));
    // one fd, kept open between lines: what spares each line its open and close
    expect(fdsOn(file)).toBe(1);
  });

  test('a small line is written before the event loop turns; a large one goes through the pool, and the lines after it wait for it', async () => {
    const file = join(dir, 'large.jsonl');
    const big = `${'x'.repeat(SYNC_IO_MAX_BYTES)}\n`;
    const writes = [appendKept(file, 'a\n'), appendKept(file, big), appendKept(file, 'b\n')];
    expect(readFileSync(file, 'utf8')).toBe('a\n');
    await Promise.all(writes);
    expect(readFileSync(file, 'utf8')).toBe(`a\n${big}b\n`);
    await appendKept(file, 'c\n');
    expect(readFileSync(file, 'utf8')).toBe(`a\n${big}b\nc\n`);
    expect(fdsOn(file)).toBe(1);
  });

  test('a file removed since goes on at the path', async () => {
    const file = join(dir, 'removed.jsonl');
    await appendKept(file, 'a\n');
    unlinkSync(file);
    await appendKept(file, 'b\n');
    expect(readFileSync(file, 'utf8')).toBe('b\n');
  });

  test('a file replaced since (a rename over it) gets the next line, not the old inode', async () => {
    const file = join(dir, 'replaced.jsonl');
    await appendKept(file, 'a\n');
    writeFileSync(`${file}.new`, 'new\n');
    renameSync(`${file}.new`, file);
    await appendKept(file, 'b\n');
    expect(readFileSync(file, 'utf8')).toBe('new\nb\n');
  });

  test('a file moved away keeps what it had; the next line starts a file at the path', async () => {
    const file = join(dir, 'moved.jsonl');
    await appendKept(file, 'a\n');
    renameSync(file, `${file}.old`);
    await appendKept(file, 'b\n');
    expect(readFileSync(`${file}.old`, 'utf8')).toBe('a\n');
    expect(readFileSync(file, 'utf8')).toBe('b\n');
  });

  test('a missing directory is an error (ENOENT) for the caller to handle', async () => {
    await expect(appendKept(join(dir, 'no-such-dir', 'x.jsonl'), 'a\n')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
