/**
 * An attack: a repo's setup command (it gets the network) read the Temporal UI's CSRF
 * token from http://127.0.0.1:<ui>/api/v1/settings and started a workflow with the sandbox off.
 * Setup now gets a network namespace of its own, connected outside by slirp4netns: the host's
 * loopback, its abstract sockets and slirp's gateway alias for the host are out of reach.
 * A listener on the host's own non-loopback address still answered setup; now the host's
 * addresses and the private ranges route nowhere in setup's namespace, unless the operator allows
 * a network (KILN_SETUP_ALLOW_NETS), while the rest of the world routes through slirp.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { createSandbox, SandboxUnavailableError, type Sandbox } from '../../../src/sandbox/index.js';
import { cleanupTempDirs, tempDir, uniqueMarker } from './helpers.js';

let sandbox: Sandbox;
let ui: HttpServer;
let uiPort = 0;
let uiHits = 0;
const csrf = uniqueMarker('csrf');

beforeAll(async () => {
  sandbox = await createSandbox({ mode: 'bwrap' });
  // stands in for the Temporal Web UI on the host's loopback
  ui = createHttpServer((_req, res) => {
    uiHits++;
    res.end(JSON.stringify({ csrfToken: csrf }));
  });
  await new Promise<void>((r) => ui.listen(0, '127.0.0.1', r));
  uiPort = (ui.address() as { port: number }).port;
});
afterAll(() => {
  ui.close();
  cleanupTempDirs();
});

const fetchCmd = (url: string) =>
  `node -e "fetch('${url}').then(r=>r.text()).then(t=>console.log('GOT '+t),e=>{console.log('FAILED '+(e.cause?.code??e.message));process.exit(1)})"`;

const setup = (command: string) => sandbox.run(command, { workspace: tempDir('ws'), timeoutMs: 15_000, network: true });

/** A TCP server on the host that greets whoever connects, and how many did. */
async function listener(host: string): Promise<{ server: Server; port: number; accepted: () => number }> {
  let n = 0;
  const server: Server = createServer((sock) => {
    n++;
    sock.end('host-hello\n');
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return { server, port: (server.address() as { port: number }).port, accepted: () => n };
}

function nonLoopbackIPv4(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

describe('setup commands (network: true)', () => {
  test("cannot read the UI's settings on the host's 127.0.0.1", async () => {
    const before = uiHits;
    const r = await setup(fetchCmd(`http://127.0.0.1:${uiPort}/api/v1/settings`));
    expect(r.exitCode).not.toBe(0);
    expect(r.output).not.toContain(csrf);
    expect(r.output).toContain('FAILED');
    expect(uiHits).toBe(before);
  });

  test("cannot reach the host's loopback through slirp's gateway alias (10.0.2.2) either", async () => {
    const before = uiHits;
    const r = await setup(fetchCmd(`http://10.0.2.2:${uiPort}/api/v1/settings`));
    expect(r.output).not.toContain(csrf);
    expect(uiHits).toBe(before);
  });

  test('control: from the host the same request gets the token', async () => {
    const res = await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`);
    expect(await res.text()).toContain(csrf);
  });

  test('control: setup has a way out — a default route that is not loopback, and a resolver', async () => {
    const r = await setup(`awk '$2 == "00000000" { print "route via " $1 }' /proc/net/route; cat /etc/resolv.conf`);
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/route via tap0/);
    expect(r.output).toMatch(/^nameserver 10\.0\.2\.3$/m);
  });

  test("attack: a listener on the host's own non-loopback address (bound to 0.0.0.0) is not reached", async () => {
    const address = nonLoopbackIPv4();
    if (!address) return; // a host with loopback only has no such address
    const { server, accepted, port } = await listener('0.0.0.0');
    try {
      const r = await setup(`exec 3<>/dev/tcp/${address}/${port} && head -1 <&3; echo "exit:$?"`);
      expect(r.output).not.toContain('host-hello');
      expect(accepted()).toBe(0);
      // the route says why: the address is unreachable from setup, not merely slow
      const route = await setup(`ip route get ${address} 2>&1 || true`);
      expect(route.output).toMatch(/unreachable|No route to host|Network is unreachable/i);
    } finally {
      server.close();
    }
  });

  test("attack: the private ranges and a cloud's metadata address route nowhere; the rest of the world routes through slirp", async () => {
    const r = await setup(
      'for a in 169.254.169.254 10.1.2.3 172.16.0.1 192.168.1.1 100.64.0.1 93.184.216.34 10.0.2.3; do echo "$a: $(ip route get $a 2>&1 | head -1)"; done',
    );
    for (const a of ['169.254.169.254', '10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1'])
      expect(r.output).toMatch(new RegExp(`${a.replace(/\./g, '\\.')}: .*(unreachable|No route)`, 'i'));
    // control: a public address, and slirp's own resolver, still go out through the gateway
    expect(r.output).toMatch(/93\.184\.216\.34: 93\.184\.216\.34 via 10\.0\.2\.2 dev tap0/);
    expect(r.output).toMatch(/10\.0\.2\.3: 10\.0\.2\.3 dev tap0/);
  });

  test('control: a network the operator allows (KILN_SETUP_ALLOW_NETS) is reached through the same listener', async () => {
    const address = nonLoopbackIPv4();
    if (!address) return;
    const { server, accepted, port } = await listener('0.0.0.0');
    const before = process.env.KILN_SETUP_ALLOW_NETS;
    process.env.KILN_SETUP_ALLOW_NETS = `${address}/32`;
    try {
      const r = await setup(`exec 3<>/dev/tcp/${address}/${port} && head -1 <&3`);
      expect(r.output).toContain('host-hello');
      expect(accepted()).toBe(1);
      // and the very same command without the network does not get there
      const none = await sandbox.run(`exec 3<>/dev/tcp/${address}/${port} && head -1 <&3`, { workspace: tempDir('ws'), timeoutMs: 5000 });
      expect(none.output).not.toContain('host-hello');
      expect(accepted()).toBe(1);
    } finally {
      if (before === undefined) delete process.env.KILN_SETUP_ALLOW_NETS;
      else process.env.KILN_SETUP_ALLOW_NETS = before;
      server.close();
    }
  });

  test('a malformed KILN_SETUP_ALLOW_NETS refuses setup with the value named; nothing runs', async () => {
    const before = process.env.KILN_SETUP_ALLOW_NETS;
    process.env.KILN_SETUP_ALLOW_NETS = '10.1.2.0/24,everything';
    try {
      const ws = tempDir('ws');
      await expect(sandbox.run('touch ran.txt', { workspace: ws, timeoutMs: 15_000, network: true })).rejects.toThrow(/KILN_SETUP_ALLOW_NETS: "everything"/);
      expect(existsSync(join(ws, 'ran.txt'))).toBe(false);
    } finally {
      if (before === undefined) delete process.env.KILN_SETUP_ALLOW_NETS;
      else process.env.KILN_SETUP_ALLOW_NETS = before;
    }
  });

  test('keeps the rest of the sandbox: worktree writable, HOME and the host root not', async () => {
    const ws = tempDir('ws');
    const r = await sandbox.run('echo ok > installed.txt; echo "ws:$?"; touch /etc/kiln-setup-x; echo "etc:$?"; cat /root/.bashrc /root/.profile 2>&1', {
      workspace: ws,
      timeoutMs: 15_000,
      network: true,
    });
    expect(r.output).toContain('ws:0');
    expect(r.output).toMatch(/etc:[1-9]/);
    expect(r.output).toContain('No such file');
  });
});

describe('without a network of its own for setup, it fails closed', () => {
  test('no slirp4netns and no operator allowance: setup is refused with what to do, and nothing runs', async () => {
    const strict = await createSandbox({ mode: 'bwrap', slirpPath: null, allowSetupHostNetwork: false });
    const ws = tempDir('ws');
    const marker = uniqueMarker('ran');
    const err = await strict.run(`echo ${marker} > ran.txt`, { workspace: ws, timeoutMs: 5000, network: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    expect((err as Error).message).toContain('apt-get install slirp4netns');
    expect((err as Error).message).toContain('KILN_SETUP_HOST_NETWORK=allow');
    // control: the same sandbox runs commands that do not ask for the network
    const r = await strict.run('echo fine', { workspace: ws, timeoutMs: 5000 });
    expect(r.output).toBe('fine\n');
  });

  test('the operator allowed the host network: setup then reaches the host (which is why it is not the default)', async () => {
    const loose = await createSandbox({ mode: 'bwrap', slirpPath: null, allowSetupHostNetwork: true });
    const r = await loose.run(fetchCmd(`http://127.0.0.1:${uiPort}/api/v1/settings`), { workspace: tempDir('ws'), timeoutMs: 10_000, network: true });
    // the token itself is redacted in the output by its shape; that it was fetched at all is the point
    expect(r.output).toContain('GOT {"csrfToken"');
  });
});
