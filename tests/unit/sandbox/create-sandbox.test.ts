import { afterAll, expect, test } from 'vitest';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearProbeCache, createSandbox, probeSandbox, SandboxUnavailableError } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir } from './helpers.js';

afterAll(cleanupTempDirs);

test('the probe passes on this host with the real bwrap', async () => {
  const probe = await probeSandbox('/usr/bin/bwrap');
  expect(probe.ok).toBe(true);
  const names = probe.checks.map((c) => c.name);
  expect(names).toEqual(
    expect.arrayContaining(['write inside the worktree succeeds', 'write outside the worktree fails', 'files under HOME are hidden', 'network is unreachable']),
  );
});

test('a missing bwrap: createSandbox throws with the install hint, and nothing runs', async () => {
  const ws = tempDir('ws');
  const err = await createSandbox({ mode: 'bwrap', bwrapPath: '/nonexistent/bin/bwrap' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandboxUnavailableError);
  expect((err as Error).message).toContain('apt-get install bubblewrap');
  expect((err as Error).message).toContain('--sandbox off');
  expect((err as Error).message).toContain('unsafe');
  // nothing to run the command with, so the marker it would create never appears
  expect(existsSync(join(ws, 'marker'))).toBe(false);
});

test('a relative bwrap path is refused (it would resolve inside a worktree)', async () => {
  await expect(createSandbox({ mode: 'bwrap', bwrapPath: 'node_modules/.bin/bwrap' })).rejects.toThrow(/not absolute/);
});

test('a bwrap that cannot start a sandbox: the error carries its message and the user-namespace hint', async () => {
  const dir = tempDir('fakebin');
  const fake = join(dir, 'bwrap');
  writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
  chmodSync(fake, 0o755);
  const err = await createSandbox({ mode: 'bwrap', bwrapPath: fake }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandboxUnavailableError);
  expect((err as Error).message).toContain('No permissions to create new namespace');
  expect((err as Error).message).toContain('kernel.unprivileged_userns_clone=1');
  expect((err as Error).message).toContain('--sandbox off');
});

test('a "bwrap" that isolates nothing is caught by the probe and refused', async () => {
  const dir = tempDir('fakebin');
  const fake = join(dir, 'bwrap');
  // Runs the command unconfined but reports like bwrap does, so only the probe's checks can tell.
  writeFileSync(
    fake,
    ['#!/bin/sh', 'while [ "$1" != "--" ]; do shift; done; shift', '"$@"; rc=$?', 'echo "{ \\"exit-code\\": $rc }" >&3', 'exit $rc', ''].join('\n'),
  );
  chmodSync(fake, 0o755);
  clearProbeCache();
  const probe = await probeSandbox(fake);
  expect(probe.ok).toBe(false);
  const failed = probe.checks.filter((c) => !c.ok).map((c) => c.name);
  expect(failed).toEqual(expect.arrayContaining(['write outside the worktree fails', 'files under HOME are hidden', 'network is unreachable']));
  const err = await createSandbox({ mode: 'bwrap', bwrapPath: fake }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandboxUnavailableError);
  expect((err as Error).message).toMatch(/probe found a leak/);
});

test('a failing command is data, not an exception; a missing workspace is an error', async () => {
  const sandbox = await createSandbox({ mode: 'bwrap' });
  const r = await sandbox.run('no-such-command-kiln', { workspace: tempDir('ws'), timeoutMs: 3000 });
  expect(r.exitCode).toBe(127);
  expect(r.output).toContain('not found');
  await expect(sandbox.run('true', { workspace: '/nonexistent/kiln/ws', timeoutMs: 3000 })).rejects.toThrow(/does not exist/);
});
