/** A small disk that tests fill to its last byte: a tmpfs of its own, so the machine's disk never fills. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** A 64 MB tmpfs when this machine lets us mount one (root); otherwise undefined, and the test says why it is skipped. */
export function smallDisk(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'kiln-tmpfs-'));
  const res = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', dir]);
  return res.status === 0 ? dir : undefined;
}

export function unmount(disk: string): void {
  spawnSync('umount', ['-l', disk]);
}

/** Fills the disk `fill` is on to its last byte with files `<fill>-N`: what is free can shrink between the look and the fill (a writer beside it). */
export function fillUp(fill: string): void {
  for (let i = 0; i < 20; i++) {
    const s = statfsSync(dirname(fill));
    if (s.bavail === 0) break;
    try {
      execFileSync('fallocate', ['-l', String(s.bavail * s.bsize), `${fill}-${i}`], { stdio: 'ignore' });
    } catch {
      // raced with a writer: look again
    }
  }
}

/** Fills the disk `fill` is on, as one file `fill`, but for `leaveBytes`. */
export function fillAllBut(fill: string, leaveBytes: number): void {
  const s = statfsSync(dirname(fill));
  execFileSync('fallocate', ['-l', String(Math.max(0, s.bavail * s.bsize - leaveBytes)), fill]);
}

/** Frees what fillUp or fillAllBut wrote as `fill`. */
export function freeFill(fill: string): void {
  const dir = dirname(fill);
  const name = basename(fill);
  for (const f of readdirSync(dir)) if (f === name || f.startsWith(`${name}-`)) rmSync(join(dir, f), { force: true });
}
