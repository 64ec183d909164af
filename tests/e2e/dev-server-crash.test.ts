/**
 * A Temporal dev server that dies while starting (a Go panic, exit 2, which can happen on a fresh
 * database under load): `kiln dev` says why in the panic's own words, not the last lines of a
 * goroutine dump, and starts it once more before giving up. The server that does start keeps
 * its SQLite file in write-ahead-log mode.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { freePort, startDevServer } from '../../src/temporal/dev-server.js';

const binary = findTemporalCli();

/** A stand-in for the binary that panics the first `panics` times, then is the real server. */
const PANIC = 'panic: failed assigning ephemeral port: listen tcp 127.0.0.1:0: socket: too many open files';
const LOST_PORT =
  'time=now level=ERROR msg="invoke failed" error="failed listening for HTTP API on 127.0.0.1:38129: listen tcp 127.0.0.1:38129: bind: address already in use"';

function crashingServer(dir: string, panics: number, said = PANIC, code = 2): { path: string; starts: () => number } {
  const count = join(dir, 'starts');
  writeFileSync(count, '');
  const dump = Array.from({ length: 200 }, (_, i) => `goroutine ${i + 2} [select]:\\n\\t/root/go/pkg/mod/x.go:${i} +0x10`).join('\\n');
  const path = join(dir, 'temporal');
  writeFileSync(
    path,
    [
      '#!/bin/sh',
      `echo x >> '${count}'`,
      `if [ "$(wc -l < '${count}')" -le ${panics} ]; then`,
      `  printf '%s\\n\\ngoroutine 1 [running]:\\n${dump}\\n' '${said.replace(/'/g, '')}' >&2`,
      `  exit ${code}`,
      'fi',
      `exec '${binary}' "$@"`,
    ].join('\n'),
  );
  chmodSync(path, 0o755);
  return { path, starts: () => readFileSync(count, 'utf8').split('\n').filter(Boolean).length };
}

/** live processes whose command line names `dir` */
function processesNaming(dir: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ');
        return cmd.includes(dir) ? [`${p}: ${cmd.slice(0, 120)}`] : [];
      } catch {
        return [];
      }
    });
}

/** A server started through `binary` on a database in `dir`, with the warnings it said. */
async function startThrough(dir: string, binary: string) {
  const said: string[] = [];
  const server = await startDevServer({ binary, dbFile: join(dir, 'temporal.db'), port: await freePort(), uiPort: await freePort(), log: (s) => said.push(s) });
  return { server, said };
}

describe.skipIf(!binary)('a dev server that crashes', () => {
  it('while starting is started once more, and the warning carries the panic headline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-crash-'));
    const fake = crashingServer(dir, 1);
    const { server, said } = await startThrough(dir, fake.path);
    // a start that lost a port the server drew for itself (another test took it) is one more start, said as such
    const raced = () => said.filter((l) => /bind: address already in use/.test(l)).length;
    try {
      expect(fake.starts()).toBe(2 + raced());
      // the database is in write-ahead-log mode (bytes 18 and 19 of an SQLite header are 2):
      // hand-offs no longer wait for an fsync per commit
      const header = readFileSync(join(dir, 'temporal.db')).subarray(18, 20);
      expect([...header]).toEqual([2, 2]);
      expect(said.filter((l) => !/bind: address already in use/.test(l))).toEqual([
        expect.stringMatching(
          /^warning: temporal dev server exited \(2\) before it was ready: panic: failed assigning ephemeral port: .*too many open files … .*starting it once more$/,
        ),
      ]);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('that lost a port it drew for itself to another program is started again, each time drawing anew, up to three times', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-crash-'));
    const fake = crashingServer(dir, 3, LOST_PORT, 1);
    const { server, said } = await startThrough(dir, fake.path);
    try {
      expect(fake.starts()).toBeGreaterThanOrEqual(4);
      expect(said.slice(0, 3).every((l) => /exited \(1\) before it was ready: .*bind: address already in use.*starting it once more$/.test(l))).toBe(true);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('while starting twice gives up with the panic in the error, and leaves no process behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-crash-'));
    const fake = crashingServer(dir, 2);
    // the server's socket directory, and so the forwarders' arguments, under this test's own directory
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = dir;
    try {
      await expect(startDevServer({ binary: fake.path, dbFile: join(dir, 'temporal.db'), port: await freePort(), uiPort: await freePort() })).rejects.toThrow(
        /exited \(2\) before it was ready: panic: failed assigning ephemeral port/,
      );
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
    expect(fake.starts()).toBe(2);
    // the bridge inside the server's network namespace was forked just before the server died, in
    // its first milliseconds: the kernel's parent-death signal was not armed yet, and it stayed
    await expect.poll(() => processesNaming(dir), { timeout: 5000 }).toEqual([]);
  }, 120_000);

  it('on SIGKILL keeps what it committed, started again on the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-crash-'));
    const dbFile = join(dir, 'temporal.db');
    const port = await freePort();
    const uiPort = await freePort();
    let server = await startDevServer({ binary: binary!, dbFile, port, uiPort });
    const connect = async () => {
      const connection = await Connection.connect({ address: server.address });
      return { connection, client: new Client({ connection }) };
    };
    let c = await connect();
    // no worker: the start and the signal are only rows in the database
    const handle = await c.client.workflow.start('kilnRun', { taskQueue: 'nobody', workflowId: 'committed', args: [] });
    await handle.signal('hint', 'written before the crash');
    await c.connection.close();
    server.process.kill('SIGKILL');
    await server.process;
    await server.stop();

    server = await startDevServer({ binary: binary!, dbFile, port, uiPort });
    try {
      c = await connect();
      const history = await c.client.workflow.getHandle('committed').fetchHistory();
      const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
      expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes!.signalName)).toEqual(['hint']);
      await c.connection.close();
    } finally {
      await server.stop();
    }
  }, 120_000);
});
