/**
 * The proxy an MCP server with a host list goes out through, on a real unix socket with a real
 * upstream; the resolver is the test's (names that resolve to private addresses cannot be made
 * in the host's DNS from a test). What a name resolves to is checked on every address, and the
 * connection goes to the address checked. Each attack sits next to the control that must pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostListAllows } from '../../../src/policy/mcp-hosts.js';
import { egressRefusal } from '../../../src/sandbox/egress-addresses.js';
import { startEgressProxy, type EgressProxy, type EgressProxyOptions } from '../../../src/sandbox/egress-proxy.js';

const OWN = { v4: ['192.0.2.2'], v6: ['2001:4860:1::5'] };

describe('which addresses the proxy may connect to', () => {
  it('control: public IPv4 and IPv6 addresses', () => {
    for (const ip of ['93.184.215.14', '1.1.1.1', '2606:2800:220:1::1', '::ffff:93.184.215.14']) expect(egressRefusal(ip, [], OWN), ip).toBeUndefined();
  });

  it("attack: loopback, private, link-local, reserved, the host's own, and IPv6 spellings of them", () => {
    const cases: [string, RegExp][] = [
      ['127.0.0.1', /loopback/],
      ['127.8.9.10', /loopback/],
      ['10.1.2.3', /private/],
      ['172.16.0.1', /private/],
      ['192.168.1.1', /private/],
      ['100.64.0.1', /private/],
      ['169.254.169.254', /link-local/],
      ['0.0.0.0', /private or reserved/],
      ['192.0.2.2', /the host's own/],
      ['203.0.113.9', /reserved/],
      ['::1', /loopback/],
      ['::', /not a public IPv6/],
      ['fe80::1', /not a public IPv6/],
      ['fd00::1', /not a public IPv6/],
      ['64:ff9b::7f00:1', /not a public IPv6/],
      ['2002:7f00:1::1', /tunnelling/],
      ['::ffff:127.0.0.1', /loopback/],
      ['::ffff:7f00:1', /loopback/],
      ['::ffff:a01:203', /private/],
      ['2001:4860:1::5', /the host's own/],
    ];
    for (const [ip, why] of cases) expect(egressRefusal(ip, [], OWN), ip).toMatch(why);
  });

  it("the operator's networks are reachable, and nothing beyond them", () => {
    expect(egressRefusal('10.1.2.3', ['10.1.2.0/24'], OWN)).toBeUndefined();
    expect(egressRefusal('::ffff:10.1.2.3', ['10.1.2.0/24'], OWN)).toBeUndefined();
    expect(egressRefusal('10.1.3.1', ['10.1.2.0/24'], OWN)).toMatch(/private/);
    expect(egressRefusal('127.0.0.1', ['10.1.2.0/24'], OWN)).toMatch(/loopback/);
  });
});

describe('the proxy', () => {
  let dir: string;
  let upstream: Server;
  let upPort = 0;
  let proxy: EgressProxy | undefined;
  let refused: string[] = [];
  let lookups: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kiln-egress-test-'));
    upstream = createHttpServer((req, res) => res.end(`upstream ${req.method} ${req.url} host=${req.headers.host}\n`));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upPort = (upstream.address() as { port: number }).port;
  });
  afterAll(() => {
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    refused = [];
    lookups = [];
  });

  /** A proxy whose list is `hosts` and whose resolver answers from `names`. */
  async function start(hosts: string[], names: Record<string, string[]>, o: Partial<EgressProxyOptions> & { delayMs?: number } = {}): Promise<string> {
    const { delayMs = 0, ...options } = o;
    const socketPath = join(dir, `p${Math.random().toString(36).slice(2)}.sock`);
    proxy = await startEgressProxy({
      socketPath,
      allows: (h, p, t) => hostListAllows(hosts, h, p, t),
      allowNets: [],
      refused: (target, why) => refused.push(`${target}: ${why}`),
      lookup: async (h) => {
        lookups.push(h);
        await new Promise((r) => setTimeout(r, delayMs));
        const a = names[h];
        if (!a) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        return a.map((address) => ({ address }));
      },
      ...options,
    });
    return socketPath;
  }

  /** Sends `request` to the proxy and returns all it answered until it closed. */
  function ask(socketPath: string, request: string | Buffer, after?: (sock: ReturnType<typeof connect>, got: () => string) => void): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = connect({ path: socketPath });
      let got = '';
      s.on('data', (d) => {
        got += d.toString();
        if (after && /^HTTP\/1.1 200 /.test(got) && got.includes('\r\n\r\n')) {
          const f = after;
          after = undefined;
          f(s, () => got);
        }
      });
      s.on('end', () => resolve(got));
      s.on('error', reject);
      s.write(request);
    });
  }
  const tunnelGet = (s: ReturnType<typeof connect>) => s.write(`GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n`);

  it('control: a listed name is tunnelled to the address the resolver gave, once resolved (no second lookup to rebind)', async () => {
    const sock = await start([`svc.example.org:${upPort}`], { 'svc.example.org': ['127.0.0.1'] }, { allowNets: ['127.0.0.1/32'] });
    const got = await ask(sock, `CONNECT svc.example.org:${upPort} HTTP/1.1\r\nHost: svc.example.org:${upPort}\r\n\r\n`, tunnelGet);
    expect(got).toMatch(/^HTTP\/1.1 200 Connection Established\r\n\r\nHTTP\/1.1 200 OK/);
    expect(got).toContain('upstream GET /x host=h');
    // the name exists only in the test's resolver: connecting by name would have failed
    expect(lookups).toEqual(['svc.example.org']);
    expect(refused).toEqual([]);
  });

  it('control: plain HTTP in absolute form goes out in origin form, one request per connection, its proxy headers dropped', async () => {
    const sock = await start([`svc.example.org:${upPort}`], { 'svc.example.org': ['127.0.0.1'] }, { allowNets: ['127.0.0.1/32'] });
    const got = await ask(
      sock,
      `GET http://svc.example.org:${upPort}/p?q=1 HTTP/1.1\r\nHost: other.example\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n\r\n`,
    );
    expect(got).toMatch(/^HTTP\/1.1 200 OK/);
    expect(got).toContain(`upstream GET /p?q=1 host=svc.example.org:${upPort}`);
  });

  it('control: what the client sends ahead of the tunnel, while the name is resolved, reaches the host', async () => {
    const sock = await start([`slow.example.org:${upPort}`], { 'slow.example.org': ['127.0.0.1'] }, { allowNets: ['127.0.0.1/32'], delayMs: 100 });
    const got = await new Promise<string>((resolve, reject) => {
      const s = connect({ path: sock });
      let b = '';
      s.on('data', (d) => (b += d.toString()));
      s.on('end', () => resolve(b));
      s.on('error', reject);
      s.write(`CONNECT slow.example.org:${upPort} HTTP/1.1\r\n\r\n`);
      setTimeout(() => s.write('GET /ahead HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n'), 30);
    });
    expect(got).toContain('upstream GET /ahead');
  });

  it('attack: a listed name that resolves to a private, link-local or loopback address is refused, and so is one with any such address among public ones', async () => {
    const sock = await start(['db.example.org', 'meta.example.org', 'mixed.example.org', 'lo.example.org'], {
      'db.example.org': ['10.1.2.3'],
      'meta.example.org': ['169.254.169.254'],
      'mixed.example.org': ['93.184.215.14', '127.0.0.1'],
      'lo.example.org': ['::1'],
    });
    for (const [name, addr, why] of [
      ['db.example.org', '10.1.2.3', 'a private or reserved network'],
      ['meta.example.org', '169.254.169.254', 'link-local'],
      ['mixed.example.org', '127.0.0.1', 'loopback'],
      ['lo.example.org', '::1', 'loopback'],
    ]) {
      const got = await ask(sock, `CONNECT ${name}:443 HTTP/1.1\r\n\r\n`);
      expect(got, name).toMatch(/^HTTP\/1.1 403 Forbidden\r\n/);
      expect(got, name).toContain(`kiln: ${name} resolves to ${addr}, ${why}: not reachable from an MCP server`);
    }
    expect(refused).toHaveLength(4);
    expect(refused[0]).toMatch(/^db.example.org:443: db.example.org resolves to 10.1.2.3/);
  });

  it("the operator's network makes a private address reachable, that network only", async () => {
    const sock = await start(
      [`db.example.org:${upPort}`, `other.example.org:${upPort}`],
      { 'db.example.org': ['127.0.0.1'], 'other.example.org': ['127.0.0.2'] },
      {
        allowNets: ['127.0.0.1/32'],
      },
    );
    expect(await ask(sock, `CONNECT db.example.org:${upPort} HTTP/1.1\r\n\r\n`, tunnelGet)).toContain('upstream GET /x');
    expect(await ask(sock, `CONNECT other.example.org:${upPort} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 403 .*\r\n\r\nkiln: other.example.org resolves to 127.0.0.2, loopback/s,
    );
  });

  it('attack: what is not a listed host:port is refused before any lookup; what is not a proxy request is a 400', async () => {
    const sock = await start(['*.example.org'], { 'a.example.org': ['93.184.215.14'] });
    for (const target of ['evil-example.org:443', 'example.org:443', 'a.example.org:22', 'a.example.org.evil.com:443', '93.184.215.14:443'])
      expect(await ask(sock, `CONNECT ${target} HTTP/1.1\r\n\r\n`), target).toContain(`kiln: ${target} is not in this MCP server's network.hosts`);
    expect(lookups).toEqual([]);
    expect(await ask(sock, 'GET https://a.example.org/ HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1.1 400 .*use CONNECT for https/s);
    expect(await ask(sock, 'CONNECT [::1]:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1.1 400 .*IPv6/s);
    expect(await ask(sock, 'SSH-2.0-OpenSSH\r\n\r\n')).toMatch(/^HTTP\/1.1 400 .*not an HTTP\/1 request/s);
    expect(await ask(sock, Buffer.alloc(20_000, 'a'))).toMatch(/^HTTP\/1.1 400 .*larger than/s);
    // a connection that goes before it asks anything is not a refusal to record
    const counted = refused.length;
    await new Promise<void>((r) =>
      connect({ path: sock }).on('connect', function (this: ReturnType<typeof connect>) {
        this.end();
        r();
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(refused).toHaveLength(counted);
  });

  it('a server that keeps trying fills the events with at most 100 refusals and one line saying more were left out', async () => {
    const sock = await start([], {});
    for (let i = 0; i < 105; i++) await ask(sock, `CONNECT h${i}.example.org:443 HTTP/1.1\r\n\r\n`);
    expect(refused).toHaveLength(101);
    expect(refused[100]).toMatch(/^\(more\): more than 100 refusals/);
  });
});
