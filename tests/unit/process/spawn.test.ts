import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signalGroup, spawnCommand, spawnerPid, useSpawner, type CommandProcess, type CommandOptions } from '../../../src/process/spawn.js';
import { survivors } from '../sandbox/helpers.js';

interface Ended {
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: Buffer;
  events: string[];
  error?: Error;
}

function ended(child: CommandProcess): Promise<Ended> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const events: string[] = [];
  let error: Error | undefined;
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr?.on('data', (d: Buffer) => err.push(d));
  child.on('spawn', () => events.push('spawn'));
  child.on('exit', () => events.push('exit'));
  child.on('error', (e: Error) => {
    events.push('error');
    error = e;
  });
  return new Promise((resolve) =>
    child.on('close', (code: number | null, signal: string | null) => {
      events.push('close');
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), events, ...(error ? { error } : {}) });
    }),
  );
}

const piped: CommandOptions = { stdio: ['ignore', 'pipe', 'pipe'] };
const run = (script: string, o: CommandOptions = piped) => ended(spawnCommand('/bin/sh', ['-c', script], o));

async function until(cond: () => boolean, ms = 5000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (cond()) return true;
  return cond();
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kiln-test-spawn-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// the same behaviour whichever process forks: the worker's spawner, or this one (CLI, tests)
describe.each([
  ['through the spawner', true],
  ['directly', false],
])('commands %s', (_name, viaSpawner) => {
  let release: (() => void) | undefined;
  beforeAll(() => {
    if (viaSpawner) release = useSpawner();
  });
  afterAll(() => release?.());

  test('the exit code, stdout and stderr arrive apart', async () => {
    const r = await run('echo out; echo err >&2; exit 3');
    expect([r.code, r.signal]).toEqual([3, null]);
    expect(r.stdout.toString()).toBe('out\n');
    expect(r.stderr.toString()).toBe('err\n');
    expect(r.events).toEqual(['spawn', 'exit', 'close']);
    if (viaSpawner) expect(spawnerPid()).toBeDefined();
    else expect(spawnerPid()).toBeUndefined();
  });

  test('a command killed by a signal reports it', async () => {
    const r = await run('kill -USR1 $$');
    expect([r.code, r.signal]).toEqual([null, 'SIGUSR1']);
  });

  test('output over 1 MB arrives intact and in order', async () => {
    const file = join(dir, 'big');
    const data = randomBytes(5 * 1024 * 1024 + 7);
    writeFileSync(file, data);
    const r = await ended(spawnCommand('cat', [file], piped));
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBe(data.length);
    expect(r.stdout.equals(data)).toBe(true);
  });

  test('the environment and working directory are the ones given, nothing else', async () => {
    const r = await ended(spawnCommand('/bin/sh', ['-c', 'pwd; env | sort'], { ...piped, cwd: dir, env: { ONLY: 'this', PATH: '/usr/bin:/bin' } }));
    const lines = r.stdout.toString().trim().split('\n');
    expect(lines[0]).toBe(dir);
    expect(lines.filter((l) => !/^(PWD|SHLVL|_)=/.test(l)).slice(1)).toEqual(['ONLY=this', 'PATH=/usr/bin:/bin']);
  });

  test('stdin can be written and closed', async () => {
    const child = spawnCommand('cat', [], { stdio: ['pipe', 'pipe', 'pipe'] });
    const done = ended(child);
    child.stdin!.write('hello ');
    child.stdin!.end('world');
    expect((await done).stdout.toString()).toBe('hello world');
  });

  test('a file named for an fd is opened for the command (the seccomp program on fd 4)', async () => {
    const file = join(dir, 'fd4');
    writeFileSync(file, 'program bytes');
    const r = await run('cat <&4', { stdio: ['ignore', 'pipe', 'pipe', 'ignore', { file }] });
    expect(r.stdout.toString()).toBe('program bytes');
    // an fd that was not asked for is not open
    const none = await run('cat <&4', { stdio: ['ignore', 'pipe', 'pipe'] });
    expect(none.code).not.toBe(0);
  });

  test('fds past stderr are pipes both ways (the network handshake)', async () => {
    const child = spawnCommand('/bin/sh', ['-c', 'echo ready >&5; read line <&6; echo "got $line"'], {
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'pipe', 'pipe'],
    });
    const done = ended(child);
    await new Promise<void>((r) => child.stdio[5]!.once('data', () => r()));
    (child.stdio[6] as NodeJS.WritableStream).end('go\n');
    expect((await done).stdout.toString()).toBe('got go\n');
  });

  test('pipes handed over to this process (a kept sandbox): written at once, read whole before close, 1 MB and more', async () => {
    const file = join(dir, 'big-handed');
    const data = randomBytes(2 * 1024 * 1024 + 3);
    writeFileSync(file, data);
    const child = spawnCommand('/bin/sh', ['-c', 'read line <&6; echo "got $line"; cat "$1"', 'sh', file], {
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', 'ignore', 'pipe'],
      handOver: [1, 6],
    });
    const done = ended(child);
    // before the spawner could have sent the fd: the write waits for it
    (child.stdio[6] as NodeJS.WritableStream).write('go\n');
    const r = await done;
    expect(r.code).toBe(0);
    expect(r.stdout.subarray(0, 7).toString()).toBe('got go\n');
    expect(r.stdout.subarray(7).equals(data)).toBe(true);
    expect(r.events).toEqual(['spawn', 'exit', 'close']);
  });

  test('a program that does not exist is an error with its code, then close', async () => {
    const r = await ended(spawnCommand('/nonexistent/kiln-no-such-program', [], piped));
    expect((r.error as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(r.events).toEqual(['error', 'close']);
  });

  test('kill() signals the command', async () => {
    const child = spawnCommand('sleep', ['100'], piped);
    const done = ended(child);
    await new Promise((r) => child.once('spawn', r));
    expect(child.pid).toBeGreaterThan(0);
    expect(child.kill('SIGKILL')).toBe(true);
    expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  test('the timeout option sends SIGTERM', async () => {
    const started = Date.now();
    const r = await ended(spawnCommand('sleep', ['100'], { ...piped, timeout: 300 }));
    expect(r.signal).toBe('SIGTERM');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test('signalGroup reaches what a detached command started, also after it exited', async () => {
    const tag = `1000.${Date.now() % 1_000_000}${Math.floor(Math.random() * 1000)}`;
    const child = spawnCommand('/bin/sh', ['-c', `sleep ${tag} >/dev/null 2>&1 &\necho started`], { ...piped, detached: true });
    const r = await ended(child);
    expect(r.stdout.toString()).toBe('started\n');
    expect(await until(() => survivors(`sleep ${tag}`).length > 0)).toBe(true);
    signalGroup(child, 'SIGKILL');
    expect(await until(() => survivors(`sleep ${tag}`).length === 0)).toBe(true);
  });
});

describe('when the spawner dies', () => {
  let release: () => void;
  beforeAll(() => {
    release = useSpawner();
  });
  afterAll(() => release());

  test('a command in flight fails with a clear error and is killed; the next command starts a new spawner', async () => {
    const child = spawnCommand('sleep', ['100'], piped);
    const done = ended(child);
    await new Promise((r) => child.once('spawn', r));
    const first = spawnerPid()!;
    process.kill(first, 'SIGKILL');
    const r = await done;
    expect(r.error?.message).toMatch(new RegExp(`the command spawner \\(pid ${first}\\) was killed by SIGKILL while sleep was running`));
    expect(r.events.slice(-2)).toEqual(['error', 'close']);
    expect(await until(() => !alive(child.pid!))).toBe(true);

    const next = await run('echo again');
    expect(next.stdout.toString()).toBe('again\n');
    expect(spawnerPid()).not.toBe(first);
  });

  test('released by its last user, it exits, and commands are spawned directly again', async () => {
    const extra = useSpawner();
    const pid = spawnerPid()!;
    extra();
    expect(spawnerPid()).toBe(pid); // still one user
    release();
    expect(spawnerPid()).toBeUndefined();
    expect(await until(() => !alive(pid))).toBe(true);
    expect((await run('echo direct')).stdout.toString()).toBe('direct\n');
    release = useSpawner();
  });
});

test('the spawner itself does not hold the worker’s environment; a command given none gets the worker’s, as with node’s spawn', async () => {
  process.env.KILN_TEST_SPAWNER_SECRET = 'sekrit';
  const release = useSpawner();
  try {
    // the pid is known from the fork; until the spawner has exec'd, /proc shows the worker's own environment
    await run('true');
    const environ = readFileSync(`/proc/${spawnerPid()}/environ`, 'utf8');
    expect(environ).toContain('PATH=');
    expect(environ).not.toContain('KILN_TEST_SPAWNER_SECRET');
    expect((await run('echo "$KILN_TEST_SPAWNER_SECRET"')).stdout.toString()).toBe('sekrit\n');
  } finally {
    release();
    delete process.env.KILN_TEST_SPAWNER_SECRET;
  }
});
