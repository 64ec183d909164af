/*
 * The hosts a sandboxed MCP server may reach (`network.hosts` of its config), and how a request
 * is matched against them. An entry is a DNS name or an IPv4 address, `*.` before a name for any
 * name under it, `:PORT` after it for that port only; without a port an entry allows 443 through
 * a tunnel (CONNECT) and 80 for plain HTTP. Matching is by name only: which addresses a name may
 * resolve to is the proxy's question (sandbox/egress-proxy.ts).
 */
import { isIPv4 } from 'node:net';

export interface HostEntry {
  /** lower case, without the `*.` */
  name: string;
  /** `*.name`: names under `name`, not `name` itself */
  wildcard: boolean;
  port?: number;
}

/** How many entries one server may list: a list that long is a sign of wanting the whole network. */
export const MCP_HOSTS_MAX = 64;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function nameProblem(name: string, wildcard: boolean): string | undefined {
  if (isIPv4(name)) return wildcard ? 'a wildcard takes a name, not an address' : undefined;
  if (name.length > 253) return 'the name is longer than 253 characters';
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l))) return 'expected a name of letters, digits, "-" and "." (no scheme, path, "_" or trailing dot)';
  // `*.com` would be most of the internet
  if (wildcard && labels.length < 2) return 'a wildcard needs at least two labels after "*." (*.example.org)';
  if (/^\d+$/.test(labels.at(-1)!)) return 'not a name nor an IPv4 address';
  return undefined;
}

/** An entry as written, or why it is not one. */
export function parseHostEntry(entry: string): HostEntry | { problem: string } {
  const m = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(entry.toLowerCase());
  if (!m) return { problem: 'expected NAME, NAME:PORT, *.NAME or *.NAME:PORT (IPv6 addresses are not supported)' };
  const wildcard = m[1] !== undefined;
  const name = m[2]!;
  const problem = nameProblem(name, wildcard);
  if (problem) return { problem };
  if (m[3] === undefined) return { name, wildcard };
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return { problem: 'the port must be 1-65535' };
  return { name, wildcard, port };
}

/**
 * Whether `host:port` is one the list names. `tunnel`: a CONNECT request (an entry without a port
 * allows 443), else plain HTTP (80). `*.example.org` matches `a.example.org` and `a.b.example.org`,
 * never `example.org` nor `evil-example.org`.
 */
export function hostListAllows(entries: readonly string[], host: string, port: number, tunnel: boolean): boolean {
  const h = host.toLowerCase();
  // only a name an entry could be: nothing a resolver might read another way gets past a wildcard
  if (nameProblem(h, false)) return false;
  return entries.some((raw) => {
    const e = parseHostEntry(raw);
    if ('problem' in e) return false;
    if (port !== (e.port ?? (tunnel ? 443 : 80))) return false;
    return e.wildcard ? h.endsWith(`.${e.name}`) : h === e.name;
  });
}
