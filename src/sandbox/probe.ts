import { createServer, type Server } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { defaultLimits } from './limits.js';
import { describeLimits, runCommand, type RunnerConfig } from './run-command.js';
import { describeToolchains } from './toolchains.js';

export interface ProbeCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ProbeResult {
  ok: boolean;
  checks: ProbeCheck[];
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

/**
 * Proves, on this host, that the sandbox holds: it must fail to write outside the worktree, to
 * read a secret under the real HOME and to reach a listener on the host's loopback, and it must
 * still be able to write inside the worktree. A probe that cannot tell (the marker could not be
 * created) says so in the detail rather than guessing.
 */
export async function probeSandbox(bwrapPath: string, config?: Partial<RunnerConfig>): Promise<ProbeResult> {
  const runner: RunnerConfig = { mode: 'bwrap', bwrapPath, limits: config?.limits ?? defaultLimits(), ...(config?.cgroupDeps ? { cgroupDeps: config.cgroupDeps } : {}) };
  const token = randomBytes(12).toString('hex');
  const workspace = mkdtempSync(join(tmpdir(), 'kiln-probe-ws-'));
  const outside = outsideDir();
  const etcMarker = `/etc/kiln-probe-${token}`;
  const homeMarker = join(homedir(), `.kiln-probe-${token}`);
  let homeMarkerMade = false;
  try {
    writeFileSync(homeMarker, `secret-${token}\n`, { mode: 0o600 });
    homeMarkerMade = true;
  } catch {
    /* read-only or missing HOME: reported below */
  }
  const listener = await listen();
  const checks: ProbeCheck[] = [];
  const run = (command: string) => runCommand(runner, command, { workspace, timeoutMs: PROBE_TIMEOUT_MS });

  try {
    try {
      await run('true');
    } catch (err) {
      checks.push({ name: 'sandbox starts', ok: false, detail: (err as Error).message });
      return { ok: false, checks };
    }

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

    checks.push({ name: 'limits', ok: true, detail: describeLimits(runner).join('; ') });
    checks.push({ name: 'toolchains', ok: true, detail: describeToolchains() });
    return { ok: checks.every((c) => c.ok), checks };
  } finally {
    listener.server.close();
    if (homeMarkerMade) rmSync(homeMarker, { force: true });
    rmSync(etcMarker, { force: true });
    rmSync(workspace, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
}
