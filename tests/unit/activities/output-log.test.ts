/**
 * A command's output log: every byte in the file as it arrives, in order, whether it stays under
 * the size written synchronously or goes past it; a log that cannot be opened is said so.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openOutputLog } from '../../../src/activities/output-log.js';
import { SYNC_IO_MAX_BYTES } from '../../../src/store/sync-io.js';

const dir = mkdtempSync(join(tmpdir(), 'kiln-output-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a command output log', () => {
  it('a short output is in the file as it arrives, in a directory made for it', async () => {
    const file = join(dir, 'outputs', 'a.log');
    const log = await openOutputLog(file, 'outputs/a.log', '$ echo hi\n', 1 << 20);
    log.write('hi\n');
    expect(readFileSync(file, 'utf8')).toBe('$ echo hi\nhi\n');
    expect(await log.close('[exit code 0]\n')).toEqual({ keptAll: true, note: 'the full output (3 bytes) is in outputs/a.log' });
    expect(readFileSync(file, 'utf8')).toBe('$ echo hi\nhi\n[exit code 0]\n');
  });

  it('an output past the synchronous bound keeps every line in order', async () => {
    const file = join(dir, 'b.log');
    const log = await openOutputLog(file, 'b.log', '$ yes\n', 1 << 30);
    const lines = Array.from({ length: 3000 }, (_, i) => `${i} ${'y'.repeat(60)}\n`);
    for (const l of lines) log.write(l);
    const note = await log.close('[exit code 0]\n');
    const text = lines.join('');
    expect(Buffer.byteLength(text)).toBeGreaterThan(SYNC_IO_MAX_BYTES);
    expect(readFileSync(file, 'utf8')).toBe(`$ yes\n${text}[exit code 0]\n`);
    expect(note.keptAll).toBe(true);
  });

  it('a log that cannot be opened is said so, and its command goes on', async () => {
    writeFileSync(join(dir, 'not-a-dir'), '');
    const log = await openOutputLog(join(dir, 'not-a-dir', 'c.log'), 'c.log', '$ true\n', 1 << 20);
    log.write('x\n');
    const note = await log.close('[exit code 0]\n');
    expect(note.keptAll).toBe(false);
    expect(note.note).toMatch(/^the output log c\.log could not be written completely \(ENOTDIR/);
  });
});
