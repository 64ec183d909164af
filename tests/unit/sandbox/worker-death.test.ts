import { afterAll, beforeAll, expect, test } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createSandbox } from '../../../src/sandbox/index.js';
import { join, resolve } from 'node:path';
import { cleanupTempDirs, survivors, tempDir, uniqueMarker } from './helpers.js';

/**
 * A worker killed with SIGKILL runs no cleanup code; its commands must die anyway (PDEATHSIG on
 * the launcher, --die-with-parent inside). This needs a real separate Node process running the
 * sandbox module, so the module is compiled once with tsc into a temp dir.
 */
let compiled = '';
beforeAll(() => {
  const root = resolve(__dirname, '../../..');
  // inside the repo (dist/ is ignored by git) so the compiled modules resolve their npm dependencies
  mkdirSync(join(root, 'dist'), { recursive: true });
  compiled = tempDir('compiled', join(root, 'dist'));
  execFileSync(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '--outDir',
      compiled,
      '--rootDir',
      join(root, 'src'),
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
      '--skipLibCheck',
      '--strict',
      join(root, 'src/sandbox/index.ts'),
      join(root, 'src/process/spawn.ts'),
      join(root, 'src/process/spawner-main.ts'),
    ],
    { cwd: root, stdio: 'inherit' },
  );
  writeFileSync(join(compiled, 'package.json'), '{"type":"module"}');
}, 60_000);
afterAll(cleanupTempDirs);

/** Running, not a zombie waiting for a parent that is gone. */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The dead worker's pid, and its spawner's when it had one. */
async function killWorkerMidCommand(mode: 'bwrap' | 'off', marker: string, viaSpawner = false): Promise<{ workerPid: number; spawnerPid?: number }> {
  const ws = tempDir('ws');
  const script = join(compiled, `worker-${marker}.mjs`);
  writeFileSync(
    script,
    `import { createSandbox } from './sandbox/index.js';
import { spawnerPid, useSpawner } from './process/spawn.js';
${viaSpawner ? 'useSpawner();' : ''}
const sb = await createSandbox({ mode: '${mode}' });
console.log('ready', spawnerPid() ?? '');
// the shell stays and waits for a child that carries the marker in its own argv
await sb.run('node -e "setTimeout(()=>{},1e6)" ${marker}; echo never', { workspace: ${JSON.stringify(ws)}, timeoutMs: 600000 });`,
  );
  const worker = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await new Promise<string>((r) => worker.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && r(d.toString())));
  const spawnerPid = Number(/ready (\d+)/.exec(ready)?.[1]) || undefined;
  expect(spawnerPid !== undefined).toBe(viaSpawner);
  // wait until the marked child runs (not just the launcher, which is still being set up)
  const shellRunning = () => survivors(marker).some((l) => /^\d+ node -e /.test(l));
  for (let i = 0; i < 50 && !shellRunning(); i++) await new Promise((r) => setTimeout(r, 100));
  expect(shellRunning()).toBe(true);
  worker.kill('SIGKILL');
  await new Promise((r) => worker.on('exit', r));
  for (let i = 0; i < 20 && survivors(marker).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  return { workerPid: worker.pid!, ...(spawnerPid ? { spawnerPid } : {}) };
}

test('a worker killed with SIGKILL takes its sandboxed command with it', async () => {
  const marker = uniqueMarker('deadworker');
  const { workerPid } = await killWorkerMidCommand('bwrap', marker);
  expect(survivors(marker)).toEqual([]);
  // the dead worker's cgroups are reaped by the next worker's first run (here: this process)
  const pidsRoot = '/sys/fs/cgroup/pids';
  if (existsSync(pidsRoot)) {
    const sandbox = await createSandbox({ mode: 'bwrap' });
    await sandbox.run('true', { workspace: tempDir('ws'), timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(readdirSync(pidsRoot).filter((d) => d.startsWith(`kiln-${workerPid}-`))).toEqual([]);
  }
}, 30_000);

test("in mode 'off' too", async () => {
  const marker = uniqueMarker('deadworkeroff');
  await killWorkerMidCommand('off', marker);
  expect(survivors(marker)).toEqual([]);
}, 30_000);

// In the worker the launcher's parent is the spawner: the worker's death kills the spawner
// (its own PDEATHSIG), whose death kills the launcher (the launcher's).
test.each(['bwrap', 'off'] as const)(
  'through the worker’s spawner (%s), the spawner and the command die with the worker',
  async (mode) => {
    const marker = uniqueMarker(`deadspawner${mode}`);
    const { spawnerPid } = await killWorkerMidCommand(mode, marker, true);
    for (let i = 0; i < 20 && running(spawnerPid!); i++) await new Promise((r) => setTimeout(r, 100));
    expect(running(spawnerPid!)).toBe(false);
    expect(survivors(marker)).toEqual([]);
  },
  30_000,
);

test('a worker that exits removes its sandbox scratch files (the masking file, the seccomp program); while it runs they are there', async () => {
  const ws = tempDir('ws');
  const script = join(compiled, `${uniqueMarker('scratch')}.mjs`);
  writeFileSync(
    script,
    `import { createSandbox } from './sandbox/index.js';
import { emptyFile } from './sandbox/scratch-files.js';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
const sb = await createSandbox({ mode: 'bwrap' });
const r = await sb.run('true', { workspace: ${JSON.stringify(ws)}, timeoutMs: 30000 });
const dir = dirname(emptyFile());
console.log(JSON.stringify({ dir, exists: existsSync(dir), exit: r.exitCode }));`,
  );
  const out = execFileSync(process.execPath, [script], { encoding: 'utf8' });
  const seen = JSON.parse(out.trim().split('\n').pop()!) as { dir: string; exists: boolean; exit: number };
  expect(seen.exit).toBe(0);
  expect(seen.dir).toMatch(/kiln-sandbox-/);
  expect(seen.exists).toBe(true);
  expect(existsSync(seen.dir)).toBe(false);
}, 30_000);
