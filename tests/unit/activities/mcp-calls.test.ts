/**
 * MCP servers run by the worker for a run, with real servers: `@modelcontextprotocol/server-everything`
 * from the npm registry, and a hostile one built on the SDK (tests/fixtures/mcp). Each runs as the
 * run's policy names it, in its own bubblewrap sandbox; calls go through runTool (policy, journal,
 * redaction, caps) as a turn's calls do. Each attack sits next to the control that must still work.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createActivities, defaultDeps, type ActivityDeps } from '../../../src/activities/index.js';
import { createSandbox, SandboxUnavailableError } from '../../../src/sandbox/index.js';
import { McpServers } from '../../../src/activities/mcp-servers.js';
import { ownCgroups } from '../../helpers/cgroups.js';
import { runMcpTools } from '../../../src/activities/mcp-catalog.js';
import { callPath, resultPath, startedPath } from '../../../src/activities/tool-results.js';
import { processTag } from '../../../src/process/owned-dirs.js';
import { registerKnownSecrets } from '../../../src/redact/index.js';
import { loadRun, writeJsonAtomic } from '../../../src/store/run-files.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const NODE_MODULES = join(ROOT, 'node_modules');
const FIXTURES = join(ROOT, 'tests/fixtures/mcp');
const EVERYTHING = join(NODE_MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
const SDK = join(NODE_MODULES, '@modelcontextprotocol/sdk/dist/esm');
const CANARY_TOKEN = 'mcp-canary-token-7f3a9c2e1b';

const deps: ActivityDeps = { ...defaultDeps(), hostQueue: 'unit-host' };
const env = new MockActivityEnvironment();

/** A run whose user policy declares the servers (and rules) given. */
async function runWith(mcp: Record<string, unknown>, d: ActivityDeps = deps) {
  const acts = createActivities(d);
  const home = mkdtempSync(join(tmpdir(), 'kiln-mcp-home-'));
  writeFileSync(join(home, 'policy.json'), JSON.stringify({ mcp }));
  const saved = process.env.KILN_HOME;
  process.env.KILN_HOME = home;
  const repo = repoWith({ 'a.txt': 'alpha\n', '.env': `TOKEN=${CANARY_TOKEN}\n` });
  const input = testInput({ repo, model: 'scripted:/dev/null' });
  try {
    await env.run(acts.prepareWorkspace, input);
  } finally {
    if (saved === undefined) delete process.env.KILN_HOME;
    else process.env.KILN_HOME = saved;
  }
  const rec = await loadRun(repo, input.runId);
  const tools = await runMcpTools(d, rec);
  let n = 0;
  const call = async (name: string, args: unknown, o: { approvedHash?: string; id?: string } = {}) => {
    const id = o.id ?? `toolu_mcp_${++n}`;
    await writeJsonAtomic(callPath(repo, input.runId, id), { id, name, input: args });
    return env.run(acts.runTool, { runId: input.runId, repo, toolUseId: id, grants: [], ...(o.approvedHash ? { approvedHash: o.approvedHash } : {}) });
  };
  /** a call a person approved: asked first (unless a rule allows it), then run with the approval's hash */
  const approved = async (name: string, args: unknown, id = `toolu_ap_${++n}`) => {
    const asked = await call(name, args, { id });
    if (asked.status !== 'ask') return asked;
    return call(name, args, { id, approvedHash: asked.hash });
  };
  /** what the model reads of a call's result */
  const modelText = (id: string) => (JSON.parse(readFileSync(resultPath(repo, input.runId, id), 'utf8')) as { content: string }).content;
  return { repo, input, rec, tools, call, approved, modelText };
}

const allowAll = [{ tool: '*', decision: 'allow' }];
const MiB = 1024 * 1024;
/** the pids of processes whose command line holds `marker` */
const pgrep = (marker: string): string[] => {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
};
const members = (cgroup: string): string[] => {
  try {
    return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};
async function until(pred: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}
const hostile = (extra: Record<string, unknown> = {}) => ({
  command: ['node', join(FIXTURES, 'hostile-server.mjs'), SDK],
  readOnlyPaths: [NODE_MODULES, FIXTURES],
  timeoutMs: 30_000,
  ...extra,
});

let listener: ReturnType<typeof createServer>;
let port = 0;
// a web service a server's host list may name, on every address of this machine
let web: ReturnType<typeof createHttpServer>;
let webPort = 0;
let tlsWeb: ReturnType<typeof createHttpsServer>;
let tlsPort = 0;
beforeAll(async () => {
  // a service on the host's loopback, like the Temporal UI: no sandboxed server may reach it
  listener = createServer((s) => s.end('secret\n'));
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as { port: number }).port;
  web = createHttpServer((req, res) => res.end(`hello from the listed host, ${req.method} ${req.url}\n`));
  await new Promise<void>((r) => web.listen(0, '0.0.0.0', r));
  webPort = (web.address() as { port: number }).port;
  // the same over TLS, with a certificate made for the test (openssl is needed)
  const certDir = mkdtempSync(join(tmpdir(), 'kiln-mcp-cert-'));
  const [key, cert] = [join(certDir, 'key.pem'), join(certDir, 'cert.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', key, '-out', cert], {
    stdio: 'ignore',
  });
  tlsWeb = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => res.end(`hello over TLS, ${req.method} ${req.url}\n`));
  await new Promise<void>((r) => tlsWeb.listen(0, '0.0.0.0', r));
  tlsPort = (tlsWeb.address() as { port: number }).port;
});
afterAll(async () => {
  listener?.close();
  web?.close();
  tlsWeb?.close();
  await deps.mcp.stopAll();
});

describe('a real MCP server from the registry (server-everything), sandboxed', () => {
  it('control: its tools join the catalog namespaced; a call asks, and once approved returns the answer', async () => {
    const { tools, call } = await runWith({ servers: { everything: { command: ['node', EVERYTHING, 'stdio'], readOnlyPaths: [NODE_MODULES] } } });
    expect(tools.map((t) => t.name)).toContain('mcp__everything__echo');
    expect(tools.every((t) => t.name.startsWith('mcp__everything__'))).toBe(true);
    const asked = await call('mcp__everything__echo', { message: 'hello from kiln' });
    expect(asked).toMatchObject({ status: 'ask', rule: 'mcp.default', summary: 'mcp__everything__echo {"message":"hello from kiln"}' });
    expect(asked.status === 'ask' && asked.preview).toContain('"message": "hello from kiln"');
    const done = await call(
      'mcp__everything__echo',
      { message: 'hello from kiln' },
      { id: 'toolu_mcp_1', approvedHash: asked.status === 'ask' ? asked.hash : '' },
    );
    expect(done).toMatchObject({ status: 'done', ok: true, effect: 'none' });
    expect(done.status === 'done' && done.summary).toContain('Echo: hello from kiln');
  }, 60_000);

  it('attack: an approval binds the exact arguments: approving one message does not run another', async () => {
    const { call } = await runWith({ servers: { everything: { command: ['node', EVERYTHING, 'stdio'], readOnlyPaths: [NODE_MODULES] } } });
    const asked = await call('mcp__everything__echo', { message: 'harmless' });
    const other = await call('mcp__everything__echo', { message: 'something else' }, { approvedHash: asked.status === 'ask' ? asked.hash : 'x' });
    expect(other).toMatchObject({ status: 'ask' });
  }, 60_000);

  it("attack: the server's environment holds none of the worker's secrets, and a token its config gives it comes back masked", async () => {
    process.env.KILN_TEST_WORKER_SECRET = 'worker-secret-value-91d2c';
    registerKnownSecrets(['worker-secret-value-91d2c']);
    const { approved, modelText } = await runWith({
      servers: { everything: { command: ['node', EVERYTHING, 'stdio'], readOnlyPaths: [NODE_MODULES], env: { SERVICE_TOKEN: 'svc-token-5e8d1f0a3c' } } },
      rules: allowAll,
    });
    await approved('mcp__everything__get-env', {}, 'toolu_env');
    const text = modelText('toolu_env');
    expect(text).toContain('SERVICE_TOKEN');
    expect(text).not.toContain('svc-token-5e8d1f0a3c');
    expect(text).not.toContain('KILN_TEST_WORKER_SECRET');
    expect(text).not.toContain('ANTHROPIC_API_KEY');
  }, 60_000);
});

describe('a hostile MCP server is contained', () => {
  it('attack: no network (not the outside, not the host loopback), no built-in name, no bloated schema; control: it runs and answers', async () => {
    const { approved, tools, repo, input } = await runWith({ servers: { bad: hostile() }, rules: allowAll });
    // its tool named like a built-in is namespaced; its 100 KB schema is left out, and that is said
    expect(tools.map((t) => t.name)).toContain('mcp__bad__read_file');
    expect(tools.map((t) => t.name)).not.toContain('mcp__bad__bloated');
    expect(readFileSync(join(repo, '.kiln', 'runs', input.runId, 'events.jsonl'), 'utf8')).toMatch(
      /MCP server \\"bad\\": tool bloated: its input schema has \d+ characters/,
    );
    const local = await approved('mcp__bad__connect', { host: '127.0.0.1', port });
    expect(local).toMatchObject({ status: 'done' });
    expect(local.status === 'done' && local.summary).toMatch(/failed: ECONNREFUSED/);
    const outside = await approved('mcp__bad__connect', { host: '1.1.1.1', port: 80 });
    expect(outside.status === 'done' && outside.summary).toMatch(/failed: (ENETUNREACH|EHOSTUNREACH|timeout)/);
  }, 60_000);

  it('attack: it writes nowhere but its scratch folder; the worktree is absent unless the config shows it read-only', async () => {
    const outside = join(mkdtempSync(join(tmpdir(), 'kiln-mcp-outside-')), 'x.txt');
    const { approved, rec, repo, input } = await runWith({ servers: { bad: hostile(), ro: hostile({ worktree: 'read-only' }) }, rules: allowAll });
    const scratch = await approved('mcp__bad__scratch', {});
    expect(scratch.status === 'done' && scratch.summary).toMatch(/ok: /);
    expect(readFileSync(join(repo, '.kiln', 'runs', input.runId, 'state', 'mcp', 'bad', 'notes', 'n.txt'), 'utf8')).toBe('kept');
    const w1 = await approved('mcp__bad__write', { path: outside });
    expect(w1.status === 'done' && w1.summary).toMatch(/failed: (ENOENT|EROFS|EACCES)/);
    expect(existsSync(outside)).toBe(false);
    const w2 = await approved('mcp__bad__write', { path: join(rec.worktree, 'a.txt') });
    expect(w2.status === 'done' && w2.summary).toMatch(/failed: ENOENT/);
    const r1 = await approved('mcp__bad__read', { path: join(rec.worktree, 'a.txt') });
    expect(r1.status === 'done' && r1.summary).toMatch(/failed: ENOENT/);
    // shown read-only: it reads the worktree, cannot change it, and the credentials in it are masked
    const r2 = await approved('mcp__ro__read', { path: join(rec.worktree, 'a.txt') });
    expect(r2.status === 'done' && r2.summary).toMatch(/ok: alpha/);
    const w3 = await approved('mcp__ro__write', { path: join(rec.worktree, 'a.txt') });
    expect(w3.status === 'done' && w3.summary).toMatch(/failed: EROFS/);
    expect(readFileSync(join(rec.worktree, 'a.txt'), 'utf8')).toBe('alpha\n');
    const env = await approved('mcp__ro__read', { path: join(rec.worktree, '.env') });
    expect(env.status === 'done' && env.summary).not.toContain(CANARY_TOKEN);
  }, 90_000);

  it('attack: a huge answer is capped and a secret in it masked; control: a small one comes back whole', async () => {
    const { approved, modelText } = await runWith({ servers: { bad: hostile() }, rules: allowAll });
    const big = await approved('mcp__bad__huge', { chars: 2_000_000 }, 'toolu_huge');
    expect(big).toMatchObject({ status: 'done', ok: true });
    expect(modelText('toolu_huge').length).toBeLessThan(31_000);
    expect(modelText('toolu_huge')).toMatch(/characters cut/);
    await approved('mcp__bad__huge', { chars: 100 }, 'toolu_small');
    expect(modelText('toolu_small')).toBe('h'.repeat(100));
    await approved('mcp__bad__leak', { secret: 'AKIAIOSFODNN7EXAMPLE' }, 'toolu_leak');
    expect(modelText('toolu_leak')).toContain('here it is:');
    expect(modelText('toolu_leak')).not.toContain('AKIAIOSFODNN7EXAMPLE');
  }, 60_000);

  it('attack: a server that hangs, dies or floods fails the call, reported, not hung; the next call gets a fresh server', async () => {
    const { approved, modelText } = await runWith({ servers: { bad: hostile({ timeoutMs: 3000 }), slow: hostile() }, rules: allowAll });
    const t0 = Date.now();
    const hung = await approved('mcp__bad__hang', {}, 'toolu_hang');
    expect(hung).toMatchObject({ status: 'done', ok: false });
    expect(modelText('toolu_hang')).toMatch(/did not answer within 3000 ms/);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(await approved('mcp__bad__scratch', {})).toMatchObject({ status: 'done', ok: true });
    const died = await approved('mcp__bad__die', {}, 'toolu_die');
    expect(died).toMatchObject({ status: 'done', ok: false });
    expect(modelText('toolu_die')).toMatch(/stopped during the call/);
    expect(await approved('mcp__bad__scratch', {})).toMatchObject({ status: 'done', ok: true });
    // a message that never ends is not kept growing in the worker: the SDK's transport (1.32) stops at 10 MB, and the call is reported
    // (a server with a long timeout, so the bound and not the timeout ends the call)
    const flood = await approved('mcp__slow__flood', {}, 'toolu_flood');
    expect(flood).toMatchObject({ status: 'done', ok: false });
    expect(modelText('toolu_flood')).toMatch(/stopped during the call/);
    expect(await approved('mcp__slow__scratch', {})).toMatchObject({ status: 'done', ok: true });
  }, 60_000);

  it("attack: a server's processes are held by a cgroup of its own: past its memory it is killed and the call reported; a child it left in a session of its own dies with it", async () => {
    // a worker whose sandbox allows 256 MiB of resident memory, so the attack needs no more than that
    const small: ActivityDeps = {
      ...defaultDeps(),
      hostQueue: 'unit-host',
      mcp: new McpServers(),
      sandbox: (mode) => createSandbox({ mode, limits: { memoryBytes: 256 * MiB } }),
    };
    try {
      const { approved, modelText } = await runWith({ servers: { bad: hostile() }, rules: allowAll }, small);
      expect(await approved('mcp__bad__allocate', { mb: 64 }, 'toolu_some')).toMatchObject({ status: 'done', ok: true });
      expect(modelText('toolu_some')).toContain('holding 64 MB');
      const marker = `kiln-mcp-orphan-${process.pid}`;
      expect(await approved('mcp__bad__orphan', { marker }, 'toolu_orphan')).toMatchObject({ status: 'done', ok: true });
      expect(pgrep(marker), 'the orphan runs while its server does').not.toEqual([]);
      // the cgroups the server and its orphan are in (the run's kept sandbox has its own)
      const held = ownCgroups().filter((c) => members(c).some((pid) => pgrep(marker).includes(pid)));
      if (process.getuid?.() === 0) expect(held.length, 'the server runs in cgroups of its own').toBeGreaterThan(0);
      const big = await approved('mcp__bad__allocate', { mb: 1024 }, 'toolu_big');
      expect(big).toMatchObject({ status: 'done', ok: false });
      expect(modelText('toolu_big')).toMatch(/stopped during the call/);
      // the server is gone, and with it everything it started, wherever it went
      await until(() => pgrep(marker).length === 0 && held.every((c) => !existsSync(c)), 10_000);
      expect(pgrep(marker)).toEqual([]);
      expect(held.filter((c) => existsSync(c))).toEqual([]);
      // the next call gets a fresh server
      expect(await approved('mcp__bad__allocate', { mb: 16 }, 'toolu_again')).toMatchObject({ status: 'done', ok: true });
    } finally {
      await small.mcp.stopAll();
    }
  }, 90_000);

  it('after a crash mid-call: a writing call is refused, not sent twice; a tool the config names read-only is sent again', async () => {
    const { approved, modelText, repo, input } = await runWith({ servers: { bad: hostile({ readOnlyTools: ['read'] }) }, rules: allowAll });
    // the journal a worker leaves when it dies after sending the call and before keeping the answer
    for (const id of ['toolu_w', 'toolu_r']) await writeJsonAtomic(startedPath(repo, input.runId, id), { at: new Date().toISOString(), name: 'x' });
    const w = await approved('mcp__bad__write', { path: '/tmp/x' }, 'toolu_w');
    expect(w).toMatchObject({ status: 'done', ok: false });
    expect(modelText('toolu_w')).toMatch(/whether it took effect is unknown. Kiln does not send a call that may write twice/);
    const r = await approved('mcp__bad__read', { path: '/etc/hostname' }, 'toolu_r');
    expect(r).toMatchObject({ status: 'done' });
    expect(modelText('toolu_r')).not.toMatch(/took effect/);
  }, 60_000);
});

describe('where a server may run', () => {
  it('fails closed: with no sandbox to be had, a stdio server is not started, its tools are not offered, and a call to one is denied', async () => {
    const noSandbox: ActivityDeps = {
      ...deps,
      sandbox: () => Promise.reject(new SandboxUnavailableError('bubblewrap not found')),
    };
    const { tools, call, repo, input } = await runWith(
      { servers: { everything: { command: ['node', EVERYTHING, 'stdio'], readOnlyPaths: [NODE_MODULES] } }, rules: allowAll },
      noSandbox,
    );
    expect(tools).toEqual([]);
    const events = readFileSync(join(repo, '.kiln', 'runs', input.runId, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"type":"mcp","tools":\[\],"problems":\["MCP server \\"everything\\" could not list its tools: bubblewrap not found/);
    expect(await call('mcp__everything__echo', { message: 'x' })).toMatchObject({ status: 'denied', rule: 'mcp.unknown-tool' });
  }, 60_000);

  it('control: a streamable HTTP server is reached by its URL; its tools are namespaced and judged the same way', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const http = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      await new Promise<void>((ready, fail) => {
        http.stderr!.on('data', (b: Buffer) => /listening on port/.test(b.toString()) && ready());
        http.on('exit', (code) => fail(new Error(`server-everything exited ${code}`)));
      });
      const { tools, call, approved, modelText } = await runWith({ servers: { remote: { url: `http://127.0.0.1:${port}/mcp` } } });
      expect(tools.map((t) => t.name)).toContain('mcp__remote__get-sum');
      expect(await call('mcp__remote__get-sum', { a: 2, b: 3 })).toMatchObject({ status: 'ask', rule: 'mcp.default' });
      await approved('mcp__remote__get-sum', { a: 2, b: 3 }, 'toolu_sum');
      expect(modelText('toolu_sum')).toMatch(/\b5\b/);
    } finally {
      http.kill();
    }
  }, 60_000);
});

describe("a server given a host list reaches those hosts only, through the worker's proxy", () => {
  /** `localhost` where it resolves to 127.0.0.1 alone (as the operator's allowed network below), else the address itself */
  const loopbackName = async () => ((await lookup('localhost', { all: true })).every((a) => a.address === '127.0.0.1') ? 'localhost' : '127.0.0.1');
  const events = (repo: string, runId: string) => readFileSync(join(repo, '.kiln', 'runs', runId, 'events.jsonl'), 'utf8');

  it("with the operator allowing loopback: a listed host answers (HTTPS and HTTP tunnelled, plain HTTP); an unlisted one, a look-alike, Temporal's port and a direct connection do not", async () => {
    const name = await loopbackName();
    process.env.KILN_MCP_ALLOW_NETS = '127.0.0.1/32';
    try {
      const { approved, modelText, repo, input } = await runWith({
        servers: { net: hostile({ network: { hosts: [`${name}:${webPort}`, `${name}:${tlsPort}`, '*.example.org'] } }) },
        rules: allowAll,
      });
      // control: the listed host, by the name the host resolves
      await approved('mcp__net__tunnel', { target: `${name}:${webPort}`, path: '/through' }, 'toolu_ok');
      expect(modelText('toolu_ok')).toBe('through: HTTP/1.1 200 OK hello from the listed host, GET /through');
      await approved('mcp__net__tunnel', { target: `${name}:${tlsPort}`, path: '/secure', tls: true }, 'toolu_tls');
      expect(modelText('toolu_tls')).toMatch(/^through TLS TLSv1\.[23]: HTTP\/1.1 200 OK hello over TLS, GET \/secure$/);
      await approved('mcp__net__plain_http', { url: `http://${name}:${webPort}/plain` }, 'toolu_plain');
      expect(modelText('toolu_plain')).toBe('status 200: hello from the listed host, GET /plain');
      // attack: the host's loopback service (Temporal's port stands in), the same host by another spelling, a look-alike of the wildcard
      for (const [id, target] of [
        ['toolu_temporal', `127.0.0.1:${port}`],
        ['toolu_7233', '127.0.0.1:7233'],
        ['toolu_other_port', `${name}:${port}`],
        ...(name === 'localhost' ? [['toolu_literal', `127.0.0.1:${webPort}`]] : []),
        ['toolu_lookalike', 'evil-example.org:443'],
        ['toolu_bare', 'example.org:443'],
      ] as const) {
        await approved('mcp__net__tunnel', { target, path: '/' }, id);
        expect(modelText(id), target).toBe(`proxy 403: kiln: ${target} is not in this MCP server's network.hosts`);
      }
      // attack: around the proxy there is no way: the host's loopback is not the sandbox's, the outside has no route
      const direct = await approved('mcp__net__connect', { host: '127.0.0.1', port: webPort });
      expect(direct.status === 'done' && direct.summary).toMatch(/failed: ECONNREFUSED/);
      const outside = await approved('mcp__net__connect', { host: '1.1.1.1', port: 443 });
      expect(outside.status === 'done' && outside.summary).toMatch(/failed: (ENETUNREACH|EHOSTUNREACH|timeout)/);
      // every refusal is in the run's events
      expect(events(repo, input.runId)).toContain(
        `"server":"net","refused":"127.0.0.1:${port}","why":"127.0.0.1:${port} is not in this MCP server's network.hosts"`,
      );
      expect(events(repo, input.runId)).toContain('"refused":"evil-example.org:443"');
    } finally {
      delete process.env.KILN_MCP_ALLOW_NETS;
    }
  }, 90_000);

  it("attack: by default the same listed loopback host is refused, and so is the host's own address, each said why", async () => {
    const name = await loopbackName();
    const own = Object.values(networkInterfaces())
      .flat()
      .find((a) => a?.family === 'IPv4' && !a.internal)?.address;
    const hosts = [`${name}:${webPort}`, ...(own ? [`${own}:${webPort}`] : [])];
    const { approved, modelText, repo, input } = await runWith({ servers: { net: hostile({ network: { hosts } }) }, rules: allowAll });
    await approved('mcp__net__tunnel', { target: `${name}:${webPort}`, path: '/' }, 'toolu_lo');
    expect(modelText('toolu_lo')).toMatch(new RegExp(`^proxy 403: kiln: ${name} resolves to 127.0.0.1, loopback: not reachable from an MCP server`));
    await approved('mcp__net__plain_http', { url: `http://${name}:${webPort}/` }, 'toolu_lo_plain');
    expect(modelText('toolu_lo_plain')).toMatch(/^status 403: kiln: .* resolves to 127.0.0.1, loopback/);
    if (own) {
      await approved('mcp__net__tunnel', { target: `${own}:${webPort}`, path: '/' }, 'toolu_own');
      expect(modelText('toolu_own')).toMatch(new RegExp(`^proxy 403: kiln: ${own.replace(/\./g, '\\.')} resolves to .*(the host's own address|reserved)`));
    }
    expect(events(repo, input.runId)).toMatch(/"server":"net","refused":"[^"]+","why":"[^"]+ resolves to 127\.0\.0\.1, loopback/);
  }, 60_000);

  it('the proxy stops with its server: a server that dies between calls takes its socket along, and the next call starts both afresh', async () => {
    const mine = () => readdirSync(tmpdir()).filter((d) => d.startsWith(`kiln-egress-${processTag(process.pid)}-`)).length;
    const before = mine();
    const { approved, modelText } = await runWith({ servers: { net: hostile({ network: { hosts: ['example.org'] } }) }, rules: allowAll });
    expect(mine()).toBe(before + 1);
    expect(await approved('mcp__net__die_soon', {})).toMatchObject({ status: 'done', ok: true });
    // no call is out: only the server's own end can stop its proxy
    await vi.waitFor(() => expect(mine()).toBe(before), { timeout: 5000 });
    await approved('mcp__net__tunnel', { target: 'evil-example.org:443', path: '/' }, 'toolu_again');
    expect(modelText('toolu_again')).toMatch(/^proxy 403: kiln: evil-example.org:443 is not in/);
    expect(mine()).toBe(before + 1);
  }, 60_000);

  it('fails closed: a malformed KILN_MCP_ALLOW_NETS keeps the server with a host list from starting, said with the value', async () => {
    process.env.KILN_MCP_ALLOW_NETS = '127.0.0.1/32,everything';
    try {
      const { tools, repo, input } = await runWith({ servers: { net: hostile({ network: { hosts: ['example.org'] } }) }, rules: allowAll });
      expect(tools).toEqual([]);
      expect(events(repo, input.runId)).toContain(
        'MCP server \\"net\\": its network proxy did not start: KILN_MCP_ALLOW_NETS: \\"everything\\" is not an IPv4 network like 10.1.2.0/24',
      );
    } finally {
      delete process.env.KILN_MCP_ALLOW_NETS;
    }
  }, 60_000);

  it('a server without a host list gets no proxy: the variables are unset and nothing answers on the port', async () => {
    const { approved, modelText } = await runWith({ servers: { bad: hostile() }, rules: allowAll });
    await approved('mcp__bad__tunnel', { target: 'example.org:443', path: '/' }, 'toolu_none');
    expect(modelText('toolu_none')).toBe('failed: ECONNREFUSED');
    const forwarder = await approved('mcp__bad__connect', { host: '127.0.0.1', port: 3128 });
    expect(forwarder.status === 'done' && forwarder.summary).toMatch(/failed: ECONNREFUSED/);
  }, 60_000);
});
