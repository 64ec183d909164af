import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { scratchFile } from './scratch-files.js';
import { dieWithParent, findSystemBinary } from './system-paths.js';

/**
 * Network for setup commands (`npm ci`, `pip install`) without the host: the sandbox gets its own
 * network namespace, and slirp4netns (Debian package `slirp4netns`, what rootless Podman uses)
 * carries its traffic out through user-mode TCP/IP. `--disable-host-loopback` refuses connections
 * to the host's 127.0.0.1 through the gateway address, and a namespace of its own has no path to
 * the host's loopback listeners (the Temporal UI, databases, dev servers) nor to its abstract unix
 * sockets; path-bound unix sockets are out of reach because /run, /tmp and /home are not mounted.
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
      done = true;
      clearTimeout(timer);
      resolve({ stop });
    });
    child.on('error', (err) => fail(`could not start slirp4netns: ${err.message}`));
    child.on('exit', (code, sig) => fail(`slirp4netns exited (${code ?? sig})`));
  });
}
