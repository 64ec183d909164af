/*
 * Which addresses a sandboxed MCP server's proxy may connect to (sandbox/egress-proxy.ts): the
 * public internet, never the host itself, its loopback services (Temporal, the Web UI, databases)
 * or the private networks around it (other machines, a cloud's metadata service), unless the
 * operator names such a network in KILN_MCP_ALLOW_NETS. The ranges are those setup's network does
 * not route to (SETUP_BLOCKED_NETS), with loopback and the documentation ranges added: the proxy
 * connects from the host, where no route fences them.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { settings } from '../settings.js';
import { hostAddresses, SETUP_BLOCKED_NETS } from './setup-network.js';

const V4_REFUSED: [string, string][] = [
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ...SETUP_BLOCKED_NETS.map((n): [string, string] => [n, 'a private or reserved network']),
  ...['192.0.0.0/24', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'].map((n): [string, string] => [n, 'a reserved network']),
];

/** IPv6 outside global unicast is refused whole; these are the parts of it that lead elsewhere (tunnels to IPv4, documentation). */
const V6_REFUSED_GLOBAL = ['2001::/32', '2001:db8::/32', '2002::/16'];

function list(type: 'ipv4' | 'ipv6', nets: readonly string[]): BlockList {
  const b = new BlockList();
  for (const n of nets) {
    const [net, bits] = n.split('/');
    b.addSubnet(net!, Number(bits), type);
  }
  return b;
}

const v4Lists = V4_REFUSED.map(([net, why]) => ({ list: list('ipv4', [net]), why }));
const globalV6 = list('ipv6', ['2000::/3']);
const refusedGlobalV6 = list('ipv6', V6_REFUSED_GLOBAL);

/** `::ffff:a.b.c.d` (either spelling) as the IPv4 address it stands for. */
function mappedIPv4(ip: string): string | undefined {
  const m = /^(?:0{0,4}:){0,5}:?ffff:(.+)$/i.exec(ip);
  if (!m || !ip.startsWith('::') || !isIPv6(ip)) return undefined;
  if (isIPv4(m[1]!)) return m[1];
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(m[1]!);
  if (!hex) return undefined;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

function v6Refusal(ip: string, own: readonly string[]): string | undefined {
  if (own.includes(ip.toLowerCase())) return "the host's own address";
  if (ip === '::1') return 'loopback';
  if (!globalV6.check(ip, 'ipv6')) return 'not a public IPv6 address (loopback, link-local, private or reserved)';
  if (refusedGlobalV6.check(ip, 'ipv6')) return 'a reserved or tunnelling IPv6 network';
  return undefined;
}

/**
 * Why the proxy may not connect to `ip`, or undefined when it may. `allowNets`: the operator's
 * IPv4 networks (KILN_MCP_ALLOW_NETS), reachable whatever else they are.
 */
export function egressRefusal(ip: string, allowNets: readonly string[], own = { v4: hostAddresses('IPv4'), v6: hostAddresses('IPv6') }): string | undefined {
  const v4 = isIPv4(ip) ? ip : mappedIPv4(ip);
  if (v4 === undefined) return isIPv6(ip) ? v6Refusal(ip, own.v6) : 'not an IP address';
  if (allowNets.length && list('ipv4', allowNets).check(v4, 'ipv4')) return undefined;
  if (own.v4.includes(v4)) return "the host's own address";
  return v4Lists.find((l) => l.list.check(v4, 'ipv4'))?.why;
}

/** KILN_MCP_ALLOW_NETS, read when a proxy starts: a malformed value stops that server, not the worker. */
export function mcpAllowNets(): string[] {
  return settings().mcpAllowNets;
}
