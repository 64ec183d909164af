import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ownedTempDir, processTag, sweepLeftDirs } from '../../../src/process/owned-dirs.js';

const children: ChildProcess[] = [];
const bases: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const b of bases.splice(0)) rmSync(b, { recursive: true, force: true });
});

function base(): string {
  const b = mkdtempSync(join(tmpdir(), 'kiln-owned-'));
  bases.push(b);
  return b;
}

/** a process that made a directory in its own name, as ownedTempDir names it */
async function ownerWithDir(b: string, prefix: string): Promise<{ child: ChildProcess; dir: string }> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((r) => child.once('spawn', r));
  const tag = processTag(child.pid!);
  expect(tag).toBeDefined();
  const dir = join(b, `${prefix}${tag}-abc123`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'empty'), '');
  return { child, dir };
}

const killed = (c: ChildProcess) =>
  new Promise<void>((r) => {
    c.once('exit', () => r());
    c.kill('SIGKILL');
  });

describe('temporary directories a killed process leaves', () => {
  it('are removed by the next process; a live owner keeps its own', async () => {
    const b = base();
    const gone = await ownerWithDir(b, 'kiln-sandbox-');
    const alive = await ownerWithDir(b, 'kiln-sandbox-');
    await killed(gone.child);

    const removed = await sweepLeftDirs('kiln-sandbox-', b);
    expect(removed).toEqual([gone.dir]);
    expect(existsSync(gone.dir)).toBe(false);
    expect(existsSync(join(alive.dir, 'empty'))).toBe(true);
  });

  it('a process that has the dead one’s pid now does not keep its directory (the start time is named too)', async () => {
    const b = base();
    const mine = processTag(process.pid)!;
    const [ns, pid] = mine.split('.');
    // this very pid, with another start time: the owner was an earlier process with this pid
    const stale = join(b, `kiln-dev-${ns}.${pid}.1-xyz789`);
    mkdirSync(stale);
    expect(await sweepLeftDirs('kiln-dev-', b)).toEqual([stale]);
  });

  it('leaves alone what is not a directory of this namespace and prefix: another namespace, a link, other names', async () => {
    const b = base();
    const [ns] = processTag(process.pid)!.split('.');
    const otherNs = join(b, `kiln-sandbox-${Number(ns) + 1}.999999.1-aaaaaa`);
    mkdirSync(otherNs);
    // a link named like a stale directory must not lead the sweep into what it points at
    const target = join(b, 'target');
    mkdirSync(target);
    writeFileSync(join(target, 'keep'), 'x');
    symlinkSync(target, join(b, `kiln-sandbox-${ns}.999999.1-bbbbbb`));
    const otherPrefix = join(b, `kiln-home-${ns}.999999.1-cccccc`);
    mkdirSync(otherPrefix);
    const untagged = join(b, 'kiln-sandbox-dddddd');
    mkdirSync(untagged);

    expect(await sweepLeftDirs('kiln-sandbox-', b)).toEqual([]);
    for (const p of [otherNs, join(target, 'keep'), otherPrefix, untagged]) expect(existsSync(p), p).toBe(true);
  });

  it('ownedTempDir names the directory for this process and sweeps the prefix once, in the background', async () => {
    const b = base();
    const gone = await ownerWithDir(b, 'kiln-test-owned-');
    await killed(gone.child);
    const dir = ownedTempDir('kiln-test-owned-', b);
    expect(dir.startsWith(join(b, `kiln-test-owned-${processTag(process.pid)}-`))).toBe(true);
    await expect.poll(() => existsSync(gone.dir)).toBe(false);
    expect(existsSync(dir)).toBe(true);
  });
});
