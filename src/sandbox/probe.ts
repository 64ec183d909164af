import { createServer, type Server } from 'node:net';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { defaultLimits } from './limits.js';
import { describeLimits, runCommand, type RunnerConfig, type SetupNetwork } from './run-command.js';
import { keyringFilter } from './seccomp.js';
import { findSystemBinary } from '../process/system-paths.js';
import { describeToolchains } from './toolchains.js';

export interface ProbeCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ProbeResult {
  ok: boolean;
  checks: ProbeCheck[];
  /** the configuration the checks passed with: what this host allows (user namespace, keyring filter, setup network) */
  runner?: RunnerConfig;
}

const PROBE_TIMEOUT_MS = 15_000;

function listen(): Promise<{ server: Server; port: number; connections: () => number }> {
  return new Promise((resolve, reject) => {
    let count = 0;
    const server = createServer((socket) => {
      count++;
      socket.destroy();
    });
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      if (addr === null || typeof addr === 'string') return reject(new Error('no TCP address'));
      resolve({ server, port: addr.port, connections: () => count });
    });
  });
}

/** A directory outside the worktree that is not hidden by a mask, so a failed write there proves the read-only root. */
function outsideDir(): string {
  const base = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
  return mkdtempSync(join(base, 'kiln-probe-out-'));
}

/** A probe takes seconds: its markers older than this were left by a probe that was killed. */
const STALE_PROBE_MS = 10 * 60_000;

/**
 * Markers a killed probe left (a SIGKILLed worker never reaches its `finally`): each one left in
 * /etc is one more file every later command's sandbox masks, and they pile up.
 */
export function sweepStaleProbeFiles(dirs: string[] = ['/etc', homedir(), tmpdir()], now = Date.now()): string[] {
  const removed: string[] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const marker = /^\.?kiln-probe-(private-)?[0-9a-f]{24}$/.test(name);
      // the probe's stand-in for a user's checkout (mkdtemp)
      const checkout = /^kiln-probe-main-[\w]{6}$/.test(name);
      if (!marker && !checkout) continue;
      const path = join(dir, name);
      try {
        const st = lstatSync(path);
        if (!(marker ? st.isFile() : st.isDirectory()) || now - st.mtimeMs < STALE_PROBE_MS) continue;
        rmSync(path, { recursive: checkout, force: true });
        removed.push(path);
      } catch {
        // gone already, or not ours to remove
      }
    }
  }
  return removed;
}

/**
 * Proves, on this host, that the sandbox holds: it must fail to write outside the worktree, to
 * read a secret under the real HOME, in the user's main checkout, in a host file others may not
 * read or in a masked `.env`, to reach a listener on the host's loopback (setup included), and to
 * touch the kernel keyring; it must still be able to write inside the worktree. A probe that
 * cannot tell (a marker could not be created) says so in the detail rather than guessing. What
 * the host does not allow (a user namespace, a setup network) is reported and, where it matters,
 * makes the affected commands refuse to run rather than run unconfined.
 */
export async function probeSandbox(bwrapPath: string, config?: Partial<RunnerConfig>): Promise<ProbeResult> {
  const base: RunnerConfig = {
    mode: 'bwrap',
    bwrapPath,
    limits: config?.limits ?? defaultLimits(),
    ...(config?.cgroupDeps ? { cgroupDeps: config.cgroupDeps } : {}),
    ...(config?.extraReadOnly ? { extraReadOnly: config.extraReadOnly } : {}),
    setupNetwork: config?.setupNetwork ?? { kind: 'refuse', reason: 'no setup network was configured' },
  };
  sweepStaleProbeFiles();
  const token = randomBytes(12).toString('hex');
  // The worktree sits where Kiln puts it: inside the user's main checkout, under .kiln/worktrees.
  const mainCheckout = mkdtempSync(join(tmpdir(), 'kiln-probe-main-'));
  const workspace = join(mainCheckout, '.kiln', 'worktrees', `probe-${token}`);
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(mainCheckout, '.env'), `MAIN_SECRET=main-${token}\n`);
  const outside = outsideDir();
  const etcMarker = `/etc/kiln-probe-${token}`;
  const privateMarker = `/etc/kiln-probe-private-${token}`;
  const homeMarker = join(homedir(), `.kiln-probe-${token}`);
  const homeMarkerMade = tryWrite(homeMarker, `secret-${token}\n`, 0o600);
  const privateMarkerMade = tryWrite(privateMarker, `private-${token}\n`, 0o600);
  const listener = await listen();
  const checks: ProbeCheck[] = [];

  try {
    const started = await firstWorkingRunner(base, workspace);
    if ('error' in started) {
      checks.push({ name: 'sandbox starts', ok: false, detail: started.error });
      return { ok: false, checks };
    }
    let runner = started.runner;
    const run = (command: string, network = false) => runCommand(runner, command, { workspace, timeoutMs: PROBE_TIMEOUT_MS, network });
    checks.push({
      name: 'unprivileged user',
      ok: true,
      detail: runner.userns
        ? `commands run in a user namespace${process.getuid?.() === 0 ? ' as uid 1000' : ''}, with no capabilities`
        : `NOT in a user namespace (${started.usernsError}); commands run with no capabilities`,
    });

    await run(`echo inside > inside-${token}.txt`);
    const insidePath = join(workspace, `inside-${token}.txt`);
    const insideOk = existsSync(insidePath) && readFileSync(insidePath, 'utf8') === 'inside\n';
    checks.push({
      name: 'write inside the worktree succeeds',
      ok: insideOk,
      detail: insideOk ? 'file written and visible on the host' : 'the command could not write into the worktree',
    });

    const outsideFile = join(outside, `leak-${token}.txt`);
    await run(`echo leak > '${outsideFile}'; echo leak > '${etcMarker}'`);
    const leaked = [outsideFile, etcMarker].filter((f) => existsSync(f));
    checks.push({
      name: 'write outside the worktree fails',
      ok: leaked.length === 0,
      detail: leaked.length === 0 ? `no file appeared in ${outside} or /etc` : `LEAK: created ${leaked.join(', ')}`,
    });

    checks.push(...(await hiddenFilesChecks(run, token, { homeMarker, homeMarkerMade, mainCheckout, privateMarker, privateMarkerMade })));

    writeFileSync(join(workspace, '.env'), `API_TOKEN=masked-${token}\n`);
    writeFileSync(join(workspace, 'notes.txt'), `plain-${token}\n`);
    const masked = await run(`grep -r '${token}' . 2>&1; ln .env leak-${token} 2>&1; cat leak-${token} 2>/dev/null; true`);
    const maskLeak = masked.output.includes(`masked-${token}`);
    const controlSeen = masked.output.includes(`plain-${token}`);
    checks.push({
      name: 'sensitive files in the worktree are masked',
      ok: !maskLeak && controlSeen,
      detail: maskLeak
        ? 'LEAK: grep -r or a hard link read .env inside'
        : controlSeen
          ? '.env reads as empty and cannot be hard-linked; notes.txt beside it is readable'
          : `the control failed: grep -r did not find notes.txt (${masked.output.trim().slice(0, 200)})`,
    });

    checks.push(await keyringCheck(runner, run, token));

    const connect =
      `node -e "require('net').connect(${listener.port},'127.0.0.1')` +
      `.on('connect',()=>{console.log('CONNECTED');process.exit(0)})` +
      `.on('error',e=>{console.log('refused: '+e.code);process.exit(1)})"`;
    const net = await run(connect);
    const reached = net.output.includes('CONNECTED') || listener.connections() > 0;
    checks.push({
      name: 'network is unreachable',
      ok: !reached,
      detail: reached ? `LEAK: connected to 127.0.0.1:${listener.port} on the host` : `127.0.0.1:${listener.port} unreachable (${net.output.trim()})`,
    });

    // a sandbox that already leaked is refused whatever setup's network does; do not wait on it
    const setup = checks.every((c) => c.ok)
      ? await setupNetworkCheck(runner, run, connect, listener)
      : {
          check: { name: "setup network does not reach the host's loopback", ok: true, detail: 'not tested: the sandbox failed the checks above' },
          network: runner.setupNetwork!,
        };
    checks.push(setup.check);
    runner = { ...runner, setupNetwork: setup.network };

    checks.push({ name: 'limits', ok: true, detail: describeLimits(runner).join('; ') });
    checks.push({ name: 'toolchains', ok: true, detail: describeToolchains() });
    return { ok: checks.every((c) => c.ok), checks, runner };
  } finally {
    listener.server.close();
    if (homeMarkerMade) rmSync(homeMarker, { force: true });
    if (privateMarkerMade) rmSync(privateMarker, { force: true });
    rmSync(etcMarker, { force: true });
    rmSync(mainCheckout, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
}

function tryWrite(file: string, content: string, mode: number): boolean {
  try {
    writeFileSync(file, content, { mode });
    return true;
  } catch {
    return false;
  }
}

/**
 * The strictest configuration that starts on this host: a user namespace and the keyring filter
 * where possible. A host that refuses unprivileged user namespaces still gets the rest.
 */
async function firstWorkingRunner(base: RunnerConfig, workspace: string): Promise<{ runner: RunnerConfig; usernsError?: string } | { error: string }> {
  const filter = keyringFilter() !== undefined;
  const tryRun = async (r: RunnerConfig): Promise<string | undefined> => {
    try {
      await runCommand(r, 'true', { workspace, timeoutMs: PROBE_TIMEOUT_MS });
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };
  const strict = { ...base, userns: true, keyringFilter: filter };
  const usernsError = await tryRun(strict);
  if (usernsError === undefined) return { runner: strict };
  const plain = { ...base, userns: false, keyringFilter: filter };
  const plainError = await tryRun(plain);
  if (plainError === undefined) return { runner: plain, usernsError };
  return { error: plainError };
}

type Run = (command: string, network?: boolean) => ReturnType<typeof runCommand>;

/** What the sandbox must not read: a secret under the real HOME, the user's main checkout, a host file others may not read. */
async function hiddenFilesChecks(
  run: Run,
  token: string,
  m: { homeMarker: string; homeMarkerMade: boolean; mainCheckout: string; privateMarker: string; privateMarkerMade: boolean },
): Promise<ProbeCheck[]> {
  const { homeMarker, homeMarkerMade, mainCheckout, privateMarker, privateMarkerMade } = m;
  const checks: ProbeCheck[] = [];
  if (homeMarkerMade) {
    const r = await run(`cat '${homeMarker}' 2>&1 || true`);
    const read = r.output.includes(`secret-${token}`);
    checks.push({
      name: 'files under HOME are hidden',
      ok: !read,
      detail: read ? `LEAK: read ${homeMarker} from inside` : `${homeMarker} not readable inside`,
    });
  } else {
    checks.push({ name: 'files under HOME are hidden', ok: true, detail: `not tested: could not create a marker in ${homedir()}` });
  }

  const main = await run(`cat ../../../.env '${mainCheckout}/.env' 2>&1; ls -A '${mainCheckout}' 2>&1 || true`);
  const mainRead = main.output.includes(`main-${token}`);
  checks.push({
    name: "the user's main checkout is hidden",
    ok: !mainRead,
    detail: mainRead ? `LEAK: read ${mainCheckout}/.env from a worktree inside it` : `${mainCheckout}/.env not readable from the worktree under it`,
  });

  if (privateMarkerMade) {
    const r = await run(`cat '${privateMarker}' 2>&1 || true`);
    const read = r.output.includes(`private-${token}`);
    checks.push({
      name: 'host files others may not read are hidden',
      ok: !read,
      detail: read ? `LEAK: read ${privateMarker} (mode 0600) from inside` : `${privateMarker} (mode 0600, in the bound /etc) reads as empty inside`,
    });
  } else {
    checks.push({
      name: 'host files others may not read are hidden',
      ok: true,
      detail: 'not tested: could not create a mode-0600 marker in /etc (not root)',
    });
  }
  return checks;
}

async function keyringCheck(runner: RunnerConfig, run: Run, token: string): Promise<ProbeCheck> {
  const name = 'kernel keyring is not shared';
  if (!runner.keyringFilter) return { name, ok: true, detail: `NOT isolated: no seccomp filter for ${process.arch}` };
  if (!findSystemBinary('keyctl')) return { name, ok: true, detail: 'keyctl, add_key and request_key denied by seccomp (not tested: keyctl(1) not installed)' };
  const r = await run(`keyctl add user kiln-probe-${token} x @s 2>&1; keyctl show @s 2>&1; true`);
  const added = /^\d+$/m.test(r.output) || r.output.includes(`kiln-probe-${token}`);
  return {
    name,
    ok: !added,
    detail: added
      ? 'LEAK: a key was added to the session keyring from inside'
      : `keyctl, add_key and request_key denied by seccomp (${r.output.trim().split('\n')[0]})`,
  };
}

/**
 * Setup's network is tried as setup gets it: a connect to the host's loopback listener must fail,
 * and the namespace must have a default route that is not loopback (the way out; this host may
 * have no internet to prove more). A slirp4netns that cannot attach leaves setup refused, not
 * the sandbox.
 */
async function setupNetworkCheck(
  runner: RunnerConfig,
  run: Run,
  connect: string,
  listener: { port: number; connections: () => number },
): Promise<{ check: ProbeCheck; network: SetupNetwork }> {
  const name = "setup network does not reach the host's loopback";
  const net = runner.setupNetwork!;
  if (net.kind === 'refuse') return { check: { name, ok: true, detail: `setup commands needing the network are refused: ${net.reason}` }, network: net };
  if (net.kind === 'host')
    return {
      check: { name, ok: true, detail: "NOT isolated: the operator allowed setup on the host's network (KILN_SETUP_HOST_NETWORK=allow)" },
      network: net,
    };
  let r;
  try {
    r = await run(`${connect}; echo; awk '$2 == "00000000" { print "route via " $1 }' /proc/net/route`, true);
  } catch (err) {
    const reason = `slirp4netns could not connect the sandbox on this host (${(err as Error).message})`;
    return { check: { name, ok: true, detail: `setup commands needing the network are refused: ${reason}` }, network: { kind: 'refuse', reason } };
  }
  const reached = r.output.includes('CONNECTED') || listener.connections() > 0;
  const route = /route via (\w+)/.exec(r.output)?.[1];
  if (reached) return { check: { name, ok: false, detail: `LEAK: setup connected to 127.0.0.1:${listener.port} on the host` }, network: net };
  if (!route || route === 'lo') {
    const reason = 'the setup namespace got no route out';
    return { check: { name, ok: true, detail: `setup commands needing the network are refused: ${reason}` }, network: { kind: 'refuse', reason } };
  }
  return { check: { name, ok: true, detail: `slirp4netns: default route via ${route}; 127.0.0.1:${listener.port} on the host unreachable` }, network: net };
}
