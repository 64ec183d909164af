import { spawn } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import type { Readable } from 'node:stream';
import { scratchFile } from './scratch-files.js';
import { dieWithParent, findSystemBinary } from '../process/system-paths.js';
import { settingsFrom } from '../settings.js';

/**
 * Network for setup commands (`npm ci`, `pip install`) without the host: the sandbox gets its own
 * network namespace, and slirp4netns (Debian package `slirp4netns`, what rootless Podman uses)
 * carries its traffic out through user-mode TCP/IP. `--disable-host-loopback` refuses connections
 * to the host's 127.0.0.1 through the gateway address, and a namespace of its own has no path to
 * the host's loopback listeners (the Temporal UI, databases, dev servers) nor to its abstract unix
 * sockets; path-bound unix sockets are out of reach because /run, /tmp and /home are not mounted.
 *
 * slirp connects out from the host, so without more an address of the host's own (a server bound
 * to 0.0.0.0 answers on it) or of its private networks (other machines, a cloud's metadata service
 * at 169.254.169.254) would be reached like any other. Setup needs the registries, not the host:
 * once slirp has configured the namespace, routes in it make those addresses unreachable
 * (fenceSetupNetwork). The sandboxed command has no capabilities, so it cannot change them.
 *
 * pasta (Debian `passt`) was tried first: as root it drops to nobody and then cannot set up the
 * namespace (bookworm's 2023-03 build), and its default `-T auto` would forward the host's
 * loopback ports into the namespace — exactly what must not happen.
 */
export const SLIRP_DNS = '10.0.2.3';
const READY_TIMEOUT_MS = 10_000;

export function findSlirp(): string | undefined {
  return findSystemBinary('slirp4netns');
}

/** The sandbox's /etc/resolv.conf: slirp's built-in resolver, which forwards to the host's. */
export function slirpResolvConf(): string {
  return scratchFile('resolv.conf', `nameserver ${SLIRP_DNS}\n`);
}

/**
 * What setup's network does not route to: the private, shared, link-local, benchmarking,
 * multicast and reserved ranges. slirp's own 10.0.2.0/24 (gateway, resolver) is more specific
 * than 10.0.0.0/8 and stays reachable.
 */
export const SETUP_BLOCKED_NETS = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
const SLIRP_GATEWAY = '10.0.2.2';

/** The host's own addresses but loopback: a listener bound to 0.0.0.0 (or ::) answers on each. */
export function hostAddresses(family: 'IPv4' | 'IPv6' = 'IPv4'): string[] {
  const out: string[] = [];
  for (const addrs of Object.values(networkInterfaces())) for (const a of addrs ?? []) if (a.family === family && !a.internal) out.push(a.address);
  return out;
}

/**
 * `ip -batch` lines for setup's namespace: every blocked range and host address unreachable, then
 * the networks the operator lets setup reach (KILN_SETUP_ALLOW_NETS, e.g. a registry mirror on
 * 10.1.2.0/24) routed through slirp, as more specific routes.
 */
export function setupRoutes(hosts: readonly string[], allowed: readonly string[]): string[] {
  return [
    ...SETUP_BLOCKED_NETS.map((n) => `route add unreachable ${n}`),
    ...hosts.filter((h) => !h.startsWith('10.0.2.')).map((h) => `route add unreachable ${h}/32`),
    ...allowed.map((n) => `route replace ${n} via ${SLIRP_GATEWAY}`),
  ];
}

/** KILN_SETUP_ALLOW_NETS: comma-separated IPv4 CIDRs; a malformed one is an error, not ignored. */
export function allowedSetupNets(env: NodeJS.ProcessEnv = process.env): string[] {
  try {
    return settingsFrom(env).setupAllowNets;
  } catch (err) {
    // read inside a command's activity: a plain Error, which Temporal retries, as it has always been
    throw new Error((err as Error).message, { cause: err });
  }
}

/**
 * Installs setupRoutes in the namespace of `childPid`, entering it with nsenter (as root, the
 * namespace's owner is below ours; otherwise its user namespace is entered first).
 */
function fenceSetupNetwork(childPid: number): Promise<void> {
  const nsenter = findSystemBinary('nsenter');
  const ip = findSystemBinary('ip');
  if (!nsenter || !ip) {
    return Promise.reject(new Error("setup's network cannot be kept off the host's own addresses: nsenter (util-linux) and ip (iproute2) are needed"));
  }
  let lines: string[];
  try {
    lines = setupRoutes(hostAddresses(), allowedSetupNets());
  } catch (err) {
    return Promise.reject(err as Error);
  }
  const asOwner = process.getuid?.() === 0 ? [] : ['--user', '--preserve-credentials'];
  const argv = [nsenter, `--target=${childPid}`, ...asOwner, '--net', ip, '-batch', '-'];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.on('error', (e) => reject(new Error(`could not fence setup's network: ${e.message}`)));
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`could not fence setup's network (ip exited ${code}): ${err.trim().split('\n').slice(-2).join(' | ')}`)),
    );
    child.stdin.end(`${lines.join('\n')}\n`);
  });
}

export interface AttachedNetwork {
  stop(): void;
}

/**
 * Connects the network namespace of `childPid` (the sandbox's first process, held by bwrap's
 * --block-fd until this resolves) to the outside. Rejects with slirp4netns's own words when it
 * could not; the caller then kills the sandbox before the command ever runs.
 */
export function attachSlirp(slirpPath: string, childPid: number): Promise<AttachedNetwork> {
  // PDEATHSIG: a worker killed with SIGKILL takes its network helpers along
  const argv = [...dieWithParent('SIGKILL'), slirpPath, '--configure', '--mtu=65520', '--disable-host-loopback', '--ready-fd=3', String(childPid), 'tap0'];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let log = '';
    let done = false;
    const stop = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    const fail = (why: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop();
      reject(new Error(`${why}${log.trim() ? `: ${log.trim().split('\n').slice(-3).join(' | ')}` : ''}`));
    };
    const timer = setTimeout(() => fail(`slirp4netns did not report ready within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
    for (const s of [child.stdout, child.stderr]) s?.on('data', (d: Buffer) => (log += d.toString('utf8')));
    (child.stdio[3] as Readable).on('data', () => {
      if (done) return;
      // the command starts only once the host's addresses are out of its reach
      fenceSetupNetwork(childPid).then(
        () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve({ stop });
        },
        (err: Error) => fail(err.message),
      );
    });
    child.on('error', (err) => fail(`could not start slirp4netns: ${err.message}`));
    child.on('exit', (code, sig) => fail(`slirp4netns exited (${code ?? sig})`));
  });
}
