/**
 * An MCP server's host list: what an entry may be (a bad one is a clear error naming it), and
 * what a request matches. Each attack sits next to the control that must still pass.
 */
import { describe, expect, it } from 'vitest';
import { parsePolicyConfig } from '../../../src/policy/config.js';
import { hostListAllows } from '../../../src/policy/mcp-hosts.js';

const withHosts = (hosts: unknown, server: Record<string, unknown> = { command: ['srv'] }) =>
  parsePolicyConfig({ mcp: { servers: { s: { ...server, network: { hosts } } } } }, 'policy.json');

describe('the host list in a policy', () => {
  it('control: names, wildcards, ports and IPv4 addresses are taken as written', () => {
    const hosts = ['api.example.com', '*.example.org:443', '127.0.0.1:8080', 'Registry.NPMJS.org'];
    expect(withHosts(hosts).mcp.servers.s!.network).toEqual({ hosts });
    // no network section: no network
    expect(parsePolicyConfig({ mcp: { servers: { s: { command: ['srv'] } } } }).mcp.servers.s!.network).toBeUndefined();
  });

  it('a bad entry is refused with the entry and the reason', () => {
    const cases: [unknown, RegExp][] = [
      [['https://api.example.com'], /host "https:\/\/api.example.com": expected NAME, NAME:PORT/],
      [['api.example.com/v1'], /host "api.example.com\/v1": expected a name of letters/],
      [['*'], /host "\*": expected a name/],
      [['*.com'], /host "\*.com": a wildcard needs at least two labels/],
      [['*.127.0.0.1'], /a wildcard takes a name, not an address/],
      [['evil*.example.org'], /expected a name of letters/],
      [['example.org.'], /expected a name of letters/],
      [['example.org:0'], /the port must be 1-65535/],
      [['example.org:70000'], /the port must be 1-65535/],
      [['1.2.3.400'], /not a name nor an IPv4 address/],
      [['[::1]:443'], /IPv6 addresses are not supported/],
      [[], /policy.json: .*hosts/],
      [Array.from({ length: 65 }, (_, i) => `h${i}.example.org`), /hosts/],
    ];
    for (const [hosts, why] of cases) expect(() => withHosts(hosts), JSON.stringify(hosts).slice(0, 40)).toThrow(why);
  });

  it('a streamable HTTP server takes no host list: Kiln does not run it', () => {
    expect(() => withHosts(['api.example.com'], { url: 'https://mcp.example.com/mcp' })).toThrow(/"network" is for a stdio server/);
  });
});

describe('what a request matches', () => {
  const list = ['api.example.com', '*.example.org', 'files.example.net:8443', '10.1.2.3:5000'];

  it('control: an exact name on its default port (443 tunnelled, 80 plain), a name under a wildcard, a named port', () => {
    expect(hostListAllows(list, 'api.example.com', 443, true)).toBe(true);
    expect(hostListAllows(list, 'API.Example.com', 443, true)).toBe(true);
    expect(hostListAllows(list, 'api.example.com', 80, false)).toBe(true);
    expect(hostListAllows(list, 'a.example.org', 443, true)).toBe(true);
    expect(hostListAllows(list, 'a.b.example.org', 443, true)).toBe(true);
    expect(hostListAllows(list, 'files.example.net', 8443, true)).toBe(true);
    expect(hostListAllows(list, 'files.example.net', 8443, false)).toBe(true);
    expect(hostListAllows(list, '10.1.2.3', 5000, true)).toBe(true);
  });

  it('attack: look-alikes, the bare wildcard name, other ports and other names are not matched', () => {
    for (const [host, port] of [
      ['evil-example.org', 443],
      ['example.org', 443],
      ['example.org.evil.com', 443],
      ['a.example.org.evil.com', 443],
      ['api.example.com.evil.com', 443],
      ['xapi.example.com', 443],
      ['api.example.com', 22],
      ['api.example.com', 8443],
      ['files.example.net', 443],
      ['10.1.2.3', 443],
      ['10.1.2.30', 5000],
      ['', 443],
      ['a\0.example.org', 443],
      ['a b.example.org', 443],
      ['evil.com#.example.org', 443],
      ['a..example.org', 443],
    ] as const)
      expect(hostListAllows(list, host, port, true), `${host}:${port}`).toBe(false);
    // the default port of a tunnel is not that of plain HTTP
    expect(hostListAllows(list, 'api.example.com', 443, false)).toBe(false);
    expect(hostListAllows(list, 'api.example.com', 80, true)).toBe(false);
  });
});
