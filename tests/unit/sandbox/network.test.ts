import { afterAll, beforeAll, expect, test } from 'vitest';
import { createConnection, createServer, type Server } from 'node:net';
import { rmSync } from 'node:fs';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
let server: Server;
let port = 0;
let accepted = 0;

beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
  server = createServer((s) => {
    accepted++;
    s.end('hello-from-host\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  server.close();
  cleanupTempDirs();
});

const bashConnect = (p: number) => `exec 3<>/dev/tcp/127.0.0.1/${p} && head -1 <&3`;

test('a TCP connect to a host listener fails inside the sandbox', async () => {
  const before = accepted;
  const r = await sandbox.run(bashConnect(port), { workspace: tempDir('ws'), timeoutMs: 5000 });
  expect(r.exitCode).not.toBe(0);
  expect(r.output).not.toContain('hello-from-host');
  expect(accepted).toBe(before);
});

test('control: the same connect from the host succeeds', async () => {
  const before = accepted;
  const line = await new Promise<string>((resolve, reject) => {
    const c = createConnection(port, '127.0.0.1');
    c.on('data', (d) => resolve(d.toString()));
    c.on('error', reject);
  });
  expect(line).toBe('hello-from-host\n');
  expect(accepted).toBe(before + 1);
});

test('a unix socket of a host service under /run is out of reach (a network namespace does not stop those)', async () => {
  const path = `/run/${uniqueMarker('sock')}.sock`;
  const unixServer = createServer((s) => s.end('unix-hello\n'));
  await new Promise<void>((r) => unixServer.listen(path, r));
  try {
    const connect = `node -e "require('net').connect('${path}').on('data',d=>process.stdout.write(d)).on('error',e=>{console.log(e.code);process.exit(1)})"`;
    const inside = await sandbox.run(connect, { workspace: tempDir('ws'), timeoutMs: 5000 });
    expect(inside.output).not.toContain('unix-hello');
    expect(inside.output).toContain('ENOENT');
    // control: the same client, unsandboxed, reaches it
    const off = await createSandbox({ mode: 'off' });
    const outside = await off.run(connect, { workspace: tempDir('ws'), timeoutMs: 5000 });
    expect(outside.output).toContain('unix-hello');
  } finally {
    unixServer.close();
    rmSync(path, { force: true });
  }
});

test('an abstract unix socket on the host (tied to the network namespace, not to a path) is out of reach', async () => {
  const name = `\0${uniqueMarker('abstract')}`;
  const abstract = createServer((s) => s.end('abstract-hello\n'));
  await new Promise<void>((r) => abstract.listen(name, r));
  try {
    const connect = `node -e "require('net').connect('\\0${name.slice(1)}').on('data',d=>process.stdout.write(d)).on('error',e=>{console.log(e.code);process.exit(1)})"`;
    const inside = await sandbox.run(connect, { workspace: tempDir('ws'), timeoutMs: 5000 });
    expect(inside.output).not.toContain('abstract-hello');
    expect(inside.output).toContain('ECONNREFUSED');
    const off = await createSandbox({ mode: 'off' });
    const outside = await off.run(connect, { workspace: tempDir('ws'), timeoutMs: 5000 });
    expect(outside.output).toContain('abstract-hello');
  } finally {
    abstract.close();
  }
});
