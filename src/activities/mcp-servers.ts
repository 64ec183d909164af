/*
 * The MCP servers this worker runs, one per run and server name: a stdio server in a sandbox of
 * its own (sandbox/server-launch.ts), a streamable HTTP server by its URL. A server is started on
 * first use, kept while the run calls it, stopped when idle, and started anew after it died.
 */
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../policy/mcp.js';
import { hostListAllows } from '../policy/mcp-hosts.js';
import { ownedTempDir } from '../process/owned-dirs.js';
import { KilnError } from '../shared/errors.js';
import { redact, registerKnownSecrets } from '../redact/index.js';
import { mcpAllowNets } from '../sandbox/egress-addresses.js';
import { startEgressProxy, type EgressProxy } from '../sandbox/egress-proxy.js';
import type { Sandbox } from '../sandbox/types.js';

/** How long a server may take to start and answer `initialize`. */
const START_TIMEOUT_MS = 30_000;
/** A server nobody called for this long is stopped; the next call starts it again. */
const IDLE_MS = 5 * 60_000;
const STDERR_TAIL_CHARS = 2000;

export interface McpServerStart {
  runId: string;
  name: string;
  config: McpServerConfig;
  /** the run's worktree, shown read-only when the config says so */
  worktree: string;
  /** where the server's own scratch folder goes */
  stateDir: string;
  sandbox(): Promise<Sandbox>;
  sensitive?: { sensitive: string[]; allowSensitive: string[] };
  /** said once when a stdio server starts without a sandbox */
  warn(text: string): void;
  /** a request of the server's that its proxy refused (not in its host list, or a private address) */
  refused(target: string, why: string): void;
}

export interface LiveServer {
  client: Client;
  /** the transport closed: the process exited, or the connection dropped */
  dead: boolean;
  /** the end of what a stdio server wrote to stderr, redacted */
  stderr(): string;
  close(): Promise<void>;
}

/** A server that did not start or answer: started afresh on the next call, so worth trying again. */
export class McpServerError extends KilnError {
  readonly retryable = true;
}

/** The server's way to the hosts its config lists: a proxy on a socket in a folder of the worker's own. */
async function egressProxy(s: McpServerStart, hosts: readonly string[]): Promise<{ socket: string; proxy: EgressProxy }> {
  // as a real path: the sandbox binds only a path that is what it says
  const dir = realpathSync(ownedTempDir('kiln-egress-'));
  const socket = join(dir, 'proxy.sock');
  try {
    const proxy = await startEgressProxy({
      socketPath: socket,
      allows: (host, port, tunnel) => hostListAllows(hosts, host, port, tunnel),
      allowNets: mcpAllowNets(),
      refused: (target, why) => s.refused(target, why),
    });
    return { socket, proxy: { close: () => proxy.close().finally(() => rmSync(dir, { recursive: true, force: true })) } };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new McpServerError(`MCP server "${s.name}": its network proxy did not start: ${(err as Error).message}`);
  }
}

async function stdioTransport(s: McpServerStart): Promise<{ transport: Transport; stderr: () => string; release: () => Promise<void> }> {
  const sandbox = await s.sandbox();
  const scratch = join(s.stateDir, 'mcp', s.name);
  mkdirSync(scratch, { recursive: true });
  const egress = s.config.network ? await egressProxy(s, s.config.network.hosts) : undefined;
  let launch;
  try {
    launch = await sandbox.serverLaunch({
      argv: s.config.command!,
      scratch,
      ...(s.config.worktree === 'read-only' ? { worktree: s.worktree } : {}),
      readOnlyPaths: s.config.readOnlyPaths,
      ...(s.sensitive ? { sensitive: s.sensitive } : {}),
      env: s.config.env,
      ...(egress ? { egressSocket: egress.socket } : {}),
    });
  } catch (err) {
    await egress?.proxy.close();
    throw err;
  }
  if (!launch.sandboxed) {
    await egress?.proxy.close();
    s.warn(`MCP server "${s.name}" runs WITHOUT a sandbox (the run's sandbox is off): it has the worker's access to files and network`);
  }
  const transport = new StdioClientTransport({ command: launch.command, args: launch.args, env: launch.env, cwd: launch.cwd, stderr: 'pipe' });
  let tail = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
  });
  const proxy = egress && launch.sandboxed ? egress.proxy : undefined;
  // what the server leaves goes with it: its cgroup's processes killed, its proxy stopped
  const release = () => Promise.all([launch.release().catch(() => undefined), proxy?.close()]).then(() => undefined);
  return { transport, stderr: () => redact(tail), release };
}

async function start(s: McpServerStart): Promise<LiveServer> {
  // a server's environment may hold its own token: masked in everything Kiln records, like the worker's
  registerKnownSecrets(Object.values(s.config.env).filter((v) => v.length >= 8));
  const { transport, stderr, release } = s.config.url
    ? { transport: new StreamableHTTPClientTransport(new URL(s.config.url)) as Transport, stderr: () => '', release: async () => {} }
    : await stdioTransport(s);
  const client = new Client({ name: 'kiln', version: '0.1.0' });
  // its processes, cgroup and proxy go with the server, whichever way it ends
  const live: LiveServer = {
    client,
    dead: false,
    stderr,
    close: () =>
      client
        .close()
        .catch(() => undefined)
        .then(release),
  };
  client.onclose = () => {
    live.dead = true;
    void release();
  };
  try {
    await client.connect(transport, { timeout: START_TIMEOUT_MS });
  } catch (err) {
    await live.close();
    const said = stderr().trim();
    throw new McpServerError(
      `MCP server "${s.name}" did not start: ${redact(String((err as Error)?.message ?? err)).slice(0, 300)}${said ? `; it said: ${said.slice(-600)}` : ''}`,
    );
  }
  return live;
}

/** The servers of every run on this worker. */
export class McpServers {
  private readonly live = new Map<string, { server: Promise<LiveServer>; timer?: NodeJS.Timeout }>();

  /** The run's server, started if it is not running (or died). */
  async get(s: McpServerStart): Promise<LiveServer> {
    const key = `${s.runId}\0${s.name}`;
    let entry = this.live.get(key);
    if (entry) {
      const server = await entry.server.catch(() => undefined);
      if (!server || server.dead) {
        this.live.delete(key);
        entry = undefined;
      }
    }
    if (!entry) {
      entry = { server: start(s) };
      entry.server.catch(() => this.live.delete(key));
      this.live.set(key, entry);
    }
    this.idleLater(key, entry);
    return entry.server;
  }

  /** Stop the run's server: the next call starts a fresh one (after a hang or a crash). */
  async stop(runId: string, name: string): Promise<void> {
    const key = `${runId}\0${name}`;
    const entry = this.live.get(key);
    this.live.delete(key);
    if (entry?.timer) clearTimeout(entry.timer);
    await (await entry?.server.catch(() => undefined))?.close();
  }

  async stopAll(): Promise<void> {
    const all = [...this.live.keys()].map((k) => k.split('\0') as [string, string]);
    await Promise.all(all.map(([run, name]) => this.stop(run, name)));
  }

  private idleLater(key: string, entry: { server: Promise<LiveServer>; timer?: NodeJS.Timeout }): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      if (this.live.get(key) !== entry) return;
      const [run, name] = key.split('\0') as [string, string];
      void this.stop(run, name);
    }, IDLE_MS);
    entry.timer.unref();
  }
}
