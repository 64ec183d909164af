import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, survivors, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
});
afterAll(cleanupTempDirs);

describe('timeouts kill the whole command', () => {
  test('a fork bomb is killed at its timeout and none of its processes survive', async () => {
    const marker = uniqueMarker('bomb');
    // the trailing sleep keeps the first shell alive; without it the pid namespace (and the bomb) dies with it at once
    const r = await sandbox.run(`# ${marker}\n:(){ :|:& };:; sleep 1000`, { workspace: tempDir('ws'), timeoutMs: 2000 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.durationMs).toBeLessThan(8000);
    // the bomb ran into the process limit rather than the host's
    expect(r.output).toMatch(/fork: .*Resource temporarily unavailable/);
    expect(survivors(marker)).toEqual([]);
  }, 20_000);

  test('a busy loop is killed at its timeout', async () => {
    const marker = uniqueMarker('loop');
    const r = await sandbox.run(`# ${marker}\nwhile true; do :; done`, { workspace: tempDir('ws'), timeoutMs: 1000 });
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeGreaterThanOrEqual(1000);
    expect(r.durationMs).toBeLessThan(5000);
    expect(survivors(marker)).toEqual([]);
  });

  test('a sleeping child and a background job in a new session are killed too', async () => {
    const marker = uniqueMarker('sleep');
    const r = await sandbox.run(`setsid sleep 1000 ${marker.length} & sleep 1000 # ${marker}`, {
      workspace: tempDir('ws'),
      timeoutMs: 1000,
    });
    expect(r.timedOut).toBe(true);
    expect(survivors(marker)).toEqual([]);
    expect(survivors(`sleep 1000 ${marker.length}`)).toEqual([]);
  });

  test('control: a command that ends in time is not marked timed out and reports its exit code', async () => {
    const r = await sandbox.run('echo done; exit 7', { workspace: tempDir('ws'), timeoutMs: 3000 });
    expect(r).toMatchObject({ exitCode: 7, timedOut: false, output: 'done\n', truncated: false });
  });

  test('an abort signal kills the command like a timeout', async () => {
    const marker = uniqueMarker('abort');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await sandbox.run(`sleep 1000 # ${marker}`, { workspace: tempDir('ws'), timeoutMs: 60_000, signal: ac.signal });
    expect(r.aborted).toBe(true);
    expect(r.timedOut).toBe(false);
    expect(r.durationMs).toBeLessThan(3000);
    expect(survivors(marker)).toEqual([]);
  });

  test('background jobs left behind by a finished command are killed', async () => {
    const marker = uniqueMarker('bg');
    const r = await sandbox.run(`(sleep 1000 # ${marker}\n) & echo started`, { workspace: tempDir('ws'), timeoutMs: 5000 });
    expect(r.exitCode).toBe(0);
    expect(r.output).toBe('started\n');
    expect(survivors(marker)).toEqual([]);
  });
});

describe('limits', () => {
  // node itself counts ~10 tasks (threads); each spawn adds one
  const spawnMany = (n: number) =>
    `node -e "const {spawn}=require('child_process');let ok=0,bad=0;` +
    `for(let i=0;i<${n};i++){try{const c=spawn('sleep',['5']);c.on('error',()=>bad++);if(c.pid)ok++;}catch{bad++}}` +
    `setTimeout(()=>{console.log('spawned',ok);process.exit(0)},300)"`;

  test('the process limit binds (measured as root): 100 children fail under a limit of 60', async () => {
    const small = await createSandbox({ mode: 'bwrap', limits: { maxProcesses: 60 } });
    const r = await small.run(spawnMany(100), { workspace: tempDir('ws'), timeoutMs: 10_000 });
    const spawned = Number(/spawned (\d+)/.exec(r.output)?.[1]);
    expect(spawned).toBeLessThan(60);
    expect(spawned).toBeGreaterThan(0);
  });

  test('control: the same 100 children start under the default limit', async () => {
    const r = await sandbox.run(spawnMany(100), { workspace: tempDir('ws'), timeoutMs: 10_000 });
    expect(r.output).toContain('spawned 100');
  });

  test('the memory limit kills a command that allocates beyond it; a smaller allocation runs', async () => {
    const limited = await createSandbox({ mode: 'bwrap', limits: { memoryBytes: 256 * 1024 * 1024 } });
    const alloc = (mb: number) => `node -e "const a=[];for(let i=0;i<${mb};i++)a.push(Buffer.alloc(1<<20,1));console.log('allocated ${mb}')"`;
    const big = await limited.run(alloc(600), { workspace: tempDir('ws'), timeoutMs: 20_000 });
    expect(big.output).not.toContain('allocated 600');
    expect(big.exitCode).not.toBe(0);
    const small = await limited.run(alloc(64), { workspace: tempDir('ws'), timeoutMs: 20_000 });
    expect(small.output).toContain('allocated 64');
  }, 30_000);

  test('node still starts under the address-space limit (64 GiB keeps WebAssembly usable)', async () => {
    const r = await sandbox.run(`node -e "new WebAssembly.Memory({initial:1});new WebAssembly.Memory({initial:1});console.log('wasm ok')"`, {
      workspace: tempDir('ws'),
      timeoutMs: 10_000,
    });
    expect(r.output).toContain('wasm ok');
  });
});

describe('output', () => {
  test('5 MB of output is capped in memory, head and tail kept, with a marker of what was cut', async () => {
    const r = await sandbox.run(`echo FIRST-LINE; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LAST-LINE`, {
      workspace: tempDir('ws'),
      timeoutMs: 10_000,
      maxOutputBytes: 64 * 1024,
    });
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.outputBytes).toBe('FIRST-LINE\n'.length + 5_000_000 + 1 + 'LAST-LINE\n'.length);
    expect(r.output.length).toBeLessThan(64 * 1024 + 200);
    expect(r.output.startsWith('FIRST-LINE\n')).toBe(true);
    expect(r.output.endsWith('LAST-LINE\n')).toBe(true);
    expect(r.output).toMatch(/kiln: \d+ bytes of output cut/);
  });

  test('the default cap is 1 MiB', async () => {
    const r = await sandbox.run('head -c 3000000 /dev/zero | tr "\\0" y', { workspace: tempDir('ws'), timeoutMs: 10_000 });
    expect(r.outputBytes).toBe(3_000_000);
    expect(r.output.length).toBeLessThan(1024 * 1024 + 200);
    expect(r.output.length).toBeGreaterThan(1024 * 1024 - 10);
  });

  test('stdout and stderr arrive interleaved in order, and are streamed as whole lines', async () => {
    const chunks: string[] = [];
    const r = await sandbox.run('echo one; echo two >&2; sleep 0.2; echo three; echo four >&2', {
      workspace: tempDir('ws'),
      timeoutMs: 5000,
      onOutput: (c) => chunks.push(c),
    });
    expect(r.output).toBe('one\ntwo\nthree\nfour\n');
    expect(chunks.join('')).toBe(r.output);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    for (const c of chunks) expect(c.endsWith('\n')).toBe(true);
  });

  test('stdin is closed: a command reading it sees end of input at once', async () => {
    const r = await sandbox.run('cat; echo "after:$?"', { workspace: tempDir('ws'), timeoutMs: 3000 });
    expect(r.timedOut).toBe(false);
    expect(r.output).toBe('after:0\n');
  });
});

describe("mode 'off'", () => {
  test('runs unsandboxed (can write outside the worktree) but still times out and kills its process group', async () => {
    const off = await createSandbox({ mode: 'off' });
    expect(off.kind).toBe('off');
    const outside = tempDir('outside');
    const marker = uniqueMarker('off');
    const r = await off.run(`echo hi > '${join(outside, 'f')}'; (sleep 1000 # ${marker}\n) & sleep 1000 # ${marker}`, {
      workspace: tempDir('ws'),
      timeoutMs: 1000,
    });
    expect(r.sandboxed).toBe(false);
    expect(r.timedOut).toBe(true);
    expect(existsSync(join(outside, 'f'))).toBe(true);
    expect(survivors(marker)).toEqual([]);
  });

  test('keeps the environment allowlist', async () => {
    process.env.KILN_TEST_SECRET_TOKEN = 'must-not-leak';
    try {
      const off = await createSandbox({ mode: 'off' });
      const r = await off.run('env', { workspace: tempDir('ws'), timeoutMs: 3000 });
      expect(r.output).not.toContain('must-not-leak');
      expect(r.output).toMatch(/^CI=1$/m);
    } finally {
      delete process.env.KILN_TEST_SECRET_TOKEN;
    }
  });
});
