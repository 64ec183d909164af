/**
 * The dev server in a network namespace of its own. Its Web UI has to listen on some TCP port,
 * and a hidden loopback port (its number is in the server's argv) let any page that found it past
 * the UI guard: a DNS-rebinding page read the settings and started workflows there. Inside its own
 * namespace the server's loopback is not the host's, so nothing on the host reaches the UI except
 * through unix sockets (filesystem objects, so they cross namespaces) in a 0700 directory: the
 * gRPC port is bridged to the host's loopback as before, the UI only to the guard.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { dieWithParent, findSystemBinary } from '../process/system-paths.js';

/**
 * One forwarder, used on both sides of the namespace: each argument pair is where to listen and
 * where to connect, a unix socket path (starts with /) or host:port, and the last argument is the
 * pid of the process it lives for. It prints `ready` once all listen. Plain JavaScript for
 * `node -e`, so src (tests) and dist run the same text.
 *
 * The kernel's parent-death signal (setpriv) is armed only once setpriv runs: a server that died
 * within its first milliseconds (a crash at start) left the forwarder beside it running for good.
 * So the forwarder also leaves when its parent is not the one it was started for.
 */
const FORWARDER = `
const net = require('node:net');
const at = (e) => (e.startsWith('/') ? { path: e } : { host: e.slice(0, e.lastIndexOf(':')), port: Number(e.slice(e.lastIndexOf(':') + 1)) });
const args = process.argv.slice(1);
const parent = args.pop();
const orphaned = () => String(process.ppid) !== parent;
if (orphaned()) process.exit(0);
setInterval(() => orphaned() && process.exit(0), 1000).unref();
let waiting = args.length / 2;
for (let i = 0; i < args.length; i += 2) {
  const from = at(args[i]);
  const to = at(args[i + 1]);
  // gRPC's small frames must not wait for Nagle on either side of a hop
  net.createServer({ noDelay: true }, (c) => {
    const up = net.connect({ ...to, noDelay: true });
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  }).listen(from, () => {
    if (--waiting === 0) process.stdout.write('ready\\n');
  });
}
`;

/** The forwarder's command, but for its last argument: the pid of the process it lives for. */
function forwarderCommand(pairs: Array<[listen: string, connect: string]>): string[] {
  return [...dieWithParent('SIGKILL'), process.execPath, '-e', FORWARDER, ...pairs.flat()];
}

/** `unshare` with the flags this user needs (root needs no user namespace), or why there is none. */
function unshareCommand(): { argv: string[] } | { problem: string } {
  const unshare = findSystemBinary('unshare');
  const ip = findSystemBinary('ip');
  if (!unshare || !ip) return { problem: `${unshare ? 'ip (iproute2)' : 'unshare (util-linux)'} is not installed` };
  const argv = [unshare, ...(process.getuid?.() === 0 ? [] : ['--user', '--map-root-user']), '--net', '--'];
  const probe = spawnSync(argv[0]!, [...argv.slice(1), ip, 'link', 'set', 'lo', 'up'], { encoding: 'utf8', timeout: 5000 });
  if (probe.status !== 0) return { problem: `a network namespace could not be made: ${(probe.stderr || probe.error?.message || '').trim()}` };
  return { argv };
}

/**
 * The command that starts `server` in a fresh network namespace with loopback up and the inner
 * bridge for `ports` (socket name → port inside), or why this host cannot. The server is exec'd
 * by the shell, so its pid, exit code and signals are the launcher's; the bridge dies with it.
 */
export function isolatedCommand(sockDir: string, ports: Record<string, number>, server: string[]): { argv: string[] } | { problem: string } {
  const u = unshareCommand();
  if (!('argv' in u)) return u;
  const ip = findSystemBinary('ip')!;
  const env = findSystemBinary('env');
  if (!env) return { problem: 'env (coreutils) is not installed' };
  const bridge = forwarderCommand(Object.entries(ports).map(([name, port]) => [`${sockDir}/${name}.sock`, `127.0.0.1:${port}`]));
  // it lives for the shell, whose pid the server it execs into keeps
  const script = `"$0" link set lo up || exit 97\n${bridge.map((_, i) => `"\${B${i}}"`).join(' ')} "$$" &\nexec "$@"`;
  // the bridge's words go through the environment: the shell's own arguments are the server's
  return { argv: [...u.argv, env, ...bridge.map((a, i) => `B${i}=${a}`), '/bin/sh', '-c', script, ip, ...server] };
}

export interface HostBridge {
  /** resolves once the process is gone and its port free again */
  close(): Promise<void>;
}

/**
 * The host's side of the gRPC bridge: a TCP listener on ip:port whose connections go to the
 * unix socket. A process of its own, not a listener in the caller: every worker's call to the
 * server passes through it, and in `kiln dev` the caller is a busy worker whose event loop (or a
 * test's synchronous exec of the `temporal` CLI) would hold each hop up.
 */
export function startHostBridge(ip: string, port: number, socketPath: string): Promise<HostBridge> {
  const [file, ...args] = [...forwarderCommand([[`${ip}:${port}`, socketPath]]), String(process.pid)];
  const child = spawn(file!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => (said = (said + d.toString()).slice(-2000)));
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve({ close: () => stop(child) });
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the gRPC bridge to ${ip}:${port} exited (${code}) before it listened: ${said.trim()}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGKILL');
  return gone;
}
