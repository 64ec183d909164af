/**
 * The scan for host files others may not read is kept between commands and dropped when the
 * host changes a scanned directory: a file made private after the last scan is masked too.
 */
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { forgetPrivateEntries, privateEntries } from '../../../src/sandbox/system-mounts.js';

const planted: string[] = [];
afterEach(() => {
  for (const p of planted.splice(0)) rmSync(p, { force: true });
  forgetPrivateEntries();
});

const masked = async (file: string) => (await privateEntries()).files.includes(file);

describe('private host files: the scan is kept until a scanned directory changes', () => {
  test('two commands in a row share one scan', async () => {
    expect(await privateEntries()).toBe(await privateEntries());
  });

  test('attack: a file made private after the scan is masked by the next command; control: made readable again, it is not', async () => {
    if (process.getuid?.() !== 0) return; // only root can plant files in /etc
    const file = `/etc/kiln-private-${process.pid}`;
    planted.push(file);
    await privateEntries();
    writeFileSync(file, 'public for now\n', { mode: 0o644 });
    chmodSync(file, 0o644);
    expect(await masked(file)).toBe(false);

    chmodSync(file, 0o600);
    // asked at once after the chmod, with no wait: the kept scan must already be gone
    expect(await masked(file), 'a chmod to 0600 must drop the kept scan').toBe(true);

    chmodSync(file, 0o644);
    expect(await masked(file)).toBe(false);
  });

  test('attack: a private file created in a subdirectory after the scan is masked', async () => {
    if (process.getuid?.() !== 0) return;
    await privateEntries();
    const file = `/etc/ssl/kiln-key-${process.pid}.pem`;
    planted.push(file);
    writeFileSync(file, 'key\n', { mode: 0o600 });
    expect(await masked(file)).toBe(true);
  });
});
