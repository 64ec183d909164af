/**
 * In the worker, the sandbox launcher is started by the worker's spawner (src/process/spawn.ts),
 * which opens the seccomp program itself and relays the network handshake's fds. The guarantees
 * that depend on that path, each next to a control. (KILN_TEST_SPAWNER=1 runs every sandbox test
 * this way.)
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { spawnerPid, useSpawner } from '../../../src/process/spawn.js';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, survivors, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
let release: () => void;
beforeAll(async () => {
  release = useSpawner();
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(() => {
  release();
  cleanupTempDirs();
});

const run = (command: string, o: { timeoutMs?: number; network?: boolean; signal?: AbortSignal } = {}) =>
  sandbox.run(command, { workspace: tempDir('ws'), timeoutMs: o.timeoutMs ?? 15_000, ...o });

/** The pid of the process's parent, from /proc. */
function parentOf(pid: number): number {
  const stat = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

test('the launcher is the spawner’s child, not the worker’s', async () => {
  const marker = uniqueMarker('parent');
  const pending = run(`sleep 3 # ${marker}`);
  // the launcher shell execs setpriv, prlimit, then bwrap: the same pid, its argv carrying the command
  let parents: number[] = [];
  for (let i = 0; i < 50 && parents.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    parents = survivors(marker)
      .filter((l) => /^\d+ \S*bwrap /.test(l))
      .map((l) => parentOf(Number(l.split(' ')[0])));
  }
  expect(parents).toContain(spawnerPid());
  expect(parents).not.toContain(process.pid);
  await pending;
});

test.runIf(existsSync('/usr/bin/keyctl') || existsSync('/bin/keyctl'))(
  'the seccomp program the spawner opens is in force: no key can be added inside',
  async () => {
    const r = await run('keyctl add user kiln-spawner value @u; echo "addu:$?"');
    expect(r.output).toMatch(/addu:[1-9]/);
    expect(r.output).toMatch(/Operation not permitted/);
  },
);

test('control: an ordinary command runs, with its exit code and output', async () => {
  const r = await run('echo hi; exit 4');
  expect(r.exitCode).toBe(4);
  expect(r.output).toBe('hi\n');
});

test('a timeout kills the command and what it left in the background', async () => {
  const marker = uniqueMarker('bg');
  const r = await run(`(sleep 1000; echo ${marker}) & sleep 1000 # ${marker}`, { timeoutMs: 800 });
  expect(r.timedOut).toBe(true);
  for (let i = 0; i < 20 && survivors(marker).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  expect(survivors(marker)).toEqual([]);
});

test('cancelling kills a running command within 2 s', async () => {
  const marker = uniqueMarker('abort');
  const ac = new AbortController();
  const started = Date.now();
  setTimeout(() => ac.abort(), 300);
  const r = await run(`sleep 1000 # ${marker}`, { timeoutMs: 60_000, signal: ac.signal });
  expect(r.aborted).toBe(true);
  expect(Date.now() - started).toBeLessThan(2300);
  expect(survivors(marker)).toEqual([]);
});

test.runIf(existsSync('/usr/bin/slirp4netns'))('setup’s network handshake (fds 5–7) goes through the spawner: the sandbox gets its own route out', async () => {
  const r = await run(`awk '$2 == "00000000" { print "route via " $1 }' /proc/net/route`, { network: true });
  expect(r.exitCode).toBe(0);
  expect(r.output).toMatch(/route via tap0/);
});
