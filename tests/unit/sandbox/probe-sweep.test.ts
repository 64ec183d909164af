/**
 * A probe killed half way (its worker SIGKILLed) left its markers in /etc and the home directory
 * for good: ten of them had piled up on this machine, each one more file every command's sandbox
 * masks. The next probe sweeps what is old; what a running probe just made, and anything that is
 * not a probe's, stays.
 */
import { existsSync, mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sweepStaleProbeFiles } from '../../../src/sandbox/probe.js';

describe('stale probe files', () => {
  it('are removed when old; fresh ones and look-alikes stay', () => {
    const etc = mkdtempSync(join(tmpdir(), 'kiln-sweep-etc-'));
    const tmp = mkdtempSync(join(tmpdir(), 'kiln-sweep-tmp-'));
    const hour = (Date.now() - 3600_000) / 1000;
    const make = (path: string, old: boolean, dir = false) => {
      if (dir) mkdirSync(path);
      else writeFileSync(path, 'x');
      if (old) utimesSync(path, hour, hour);
      return path;
    };
    const oldPrivate = make(join(etc, 'kiln-probe-private-0123456789abcdef01234567'), true);
    const oldHome = make(join(etc, '.kiln-probe-0123456789abcdef01234567'), true);
    const oldCheckout = make(join(tmp, 'kiln-probe-main-AbC123'), true, true);
    const fresh = make(join(etc, 'kiln-probe-private-fedcba9876543210fedcba98'), false);
    const freshCheckout = make(join(tmp, 'kiln-probe-main-Zz9Yy8'), false, true);
    const lookAlike = make(join(etc, 'kiln-probe-private-notatoken'), true);
    const users = make(join(etc, 'passwd'), true);

    const removed = sweepStaleProbeFiles([etc, tmp]);
    expect(removed.sort()).toEqual([oldPrivate, oldHome, oldCheckout].sort());
    for (const p of [oldPrivate, oldHome, oldCheckout]) expect(existsSync(p)).toBe(false);
    for (const p of [fresh, freshCheckout, lookAlike, users]) expect(existsSync(p)).toBe(true);
  });
});
