/**
 * Which file a command joins its cgroups through. On v1 it is `tasks` (written 0 by the
 * single-threaded launcher): cgroup.procs takes the kernel's global lock, whose first use after a
 * quiet spell waits an RCU grace period, ~10 ms a hierarchy, which every turn's command paid.
 * Whether the command really ends up inside is the process- and memory-limit tests' business
 * (process-control.test.ts): they fail if the join does not happen.
 */
import { afterAll, expect, test } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunCgroup } from '../../../src/sandbox/cgroup.js';
import { defaultLimits } from '../../../src/sandbox/limits.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

afterAll(cleanupTempDirs);

function fakeHost(layout: 'v1' | 'v2'): { root: string; procSelfCgroup: string } {
  const root = tempDir(`cgroup-${layout}`);
  const self = join(root, 'self-cgroup');
  if (layout === 'v1') {
    for (const c of ['pids', 'memory']) {
      mkdirSync(join(root, c, 'worker'), { recursive: true });
      writeFileSync(join(root, c, 'worker', 'cgroup.procs'), '');
    }
    writeFileSync(self, '8:pids:/worker\n4:memory:/worker\n0::/\n');
  } else {
    mkdirSync(join(root, 'worker'), { recursive: true });
    writeFileSync(join(root, 'cgroup.controllers'), 'pids memory\n');
    writeFileSync(join(root, 'worker', 'cgroup.subtree_control'), 'pids memory\n');
    writeFileSync(self, '0::/worker\n');
  }
  return { root, procSelfCgroup: self };
}

test('on cgroup v1 a command joins through each hierarchy’s tasks file, with both limits written', async () => {
  const deps = fakeHost('v1');
  const cg = createRunCgroup(defaultLimits(), deps)!;
  expect(cg.joinFiles).toHaveLength(2);
  expect(cg.joinFiles.every((f) => f.endsWith('/tasks'))).toBe(true);
  expect(cg.joinFiles.map((f) => f.split('/').slice(-3, -2)[0])).toEqual(['worker', 'worker']);
  expect(cg.limits.join(' ')).toMatch(/pids.*memory/);
  await cg.remove();
});

test('control: on cgroup v2 (a delegated subtree) it joins through cgroup.procs', async () => {
  const deps = fakeHost('v2');
  const cg = createRunCgroup(defaultLimits(), deps)!;
  expect(cg.joinFiles).toHaveLength(1);
  expect(cg.joinFiles[0]).toMatch(/\/worker\/kiln-\d+-[0-9a-f]+\/cgroup\.procs$/);
  await cg.remove();
});

test('a cgroup.procs that lists 0 (never a real member) does not make the sweep signal this process’s own group', async () => {
  const deps = fakeHost('v2');
  const cg = createRunCgroup(defaultLimits(), deps)!;
  writeFileSync(cg.joinFiles[0]!, '0\n');
  // with 0 taken for a pid, process.kill(0, 'SIGKILL') would end this test run here
  await cg.killAll();
  expect(process.pid).toBeGreaterThan(0);
});
