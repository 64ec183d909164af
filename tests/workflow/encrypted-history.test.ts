/**
 * Encrypted history on the dev server `kiln dev` starts: a scripted run with a canary in its goal
 * and in a tool's output leaves no plaintext of either in Temporal (read raw with the Temporal
 * CLI); the codec server gives them back to a holder of the token; a worker without the key
 * refuses the run by naming the key; the Web UI, through the codec server, shows the canary.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCodecServer } from '../../src/cli/actions/codec-server.js';
import { dataConverterFor, type KilnDataConverter } from '../../src/codec/data-converter.js';
import { loadKeyring } from '../../src/codec/keys.js';
import type { CodecServer } from '../../src/codec/server.js';
import { defaultDeps } from '../../src/activities/index.js';
import { outcome } from '../../src/client/runs.js';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import type { kilnRun } from '../../src/workflows/run.js';
import { artifactsDir } from '../helpers/artifacts.js';
import { repoWith, writeScript } from '../helpers/repo.js';
import { kiln, userEnv } from '../e2e/cli.js';
import { testInput } from '../helpers/run-input.js';

const binary = findTemporalCli();
const CHROMIUM = '/usr/bin/chromium';
const GOAL_CANARY = `goal-canary-${randomBytes(6).toString('hex')}`;
const TOOL_CANARY = `tool-canary-${randomBytes(6).toString('hex')}`;
const QUEUE = 'kiln-encrypted-tests';

let dir: string;
let server: DevServer;
let codecServer: CodecServer;
let converter: KilnDataConverter;
let native: NativeConnection;
let connection: Connection;
let client: Client;
let worker: RunningWorker;
let runId: string;
let keysFile: string;

/** `temporal workflow show --output json`: the history as the server stores it, no codec. */
function rawHistory(workflowId: string): string {
  return execFileSync(binary!, ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', server.address, '--namespace', 'default'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** Every string in the history, as it is and base64-decoded: JSON payloads show either way. */
function readable(json: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v, Buffer.from(v, 'base64').toString('latin1'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(JSON.parse(json));
  return out;
}

/** The payloads in a history JSON (objects with metadata and data), as the UI would send them. */
function payloadsOf(json: string): unknown[] {
  const out: unknown[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (o.metadata && typeof o.metadata === 'object' && 'encoding' in o.metadata) out.push({ metadata: o.metadata, data: o.data });
    else Object.values(o).forEach(walk);
  };
  walk(JSON.parse(json));
  return out;
}

describe.skipIf(!binary)('encrypted history', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kiln-encrypted-'));
    keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ active: 'k1', keys: { k1: randomBytes(32).toString('base64') } }));
    converter = dataConverterFor(await loadKeyring({ KILN_CODEC_KEYS_FILE: keysFile }));
    const uiPort = await freePort();
    // what `kiln dev` does with keys set: a codec server, which the UI reaches through the guard on its own origin
    codecServer = await openCodecServer({ port: 0, origin: `http://127.0.0.1:${uiPort}`, env: { KILN_CODEC_KEYS_FILE: keysFile } });
    server = await startDevServer({
      binary: binary!,
      dbFile: join(dir, 'temporal.db'),
      port: await freePort(),
      uiPort,
      codec: { url: codecServer.url, token: codecServer.token },
    });
    native = await NativeConnection.connect({ address: server.address });
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection, namespace: 'default', dataConverter: converter.dataConverter });
    worker = await startWorker({
      connection: native,
      settings: { address: server.address, namespace: 'default', taskQueue: QUEUE },
      deps: { ...defaultDeps(), hostQueue: `${QUEUE}-host` },
      dataConverter: converter,
    });
  });

  afterAll(async () => {
    await worker?.shutdown();
    await connection?.close();
    await native?.close();
    await codecServer?.close();
    await server?.stop();
  });

  it('a run succeeds with encryption on, and the raw history holds no plaintext of its canaries', async () => {
    expect(worker.codec).toMatch(/ENCRYPTED .*"k1"/);
    const repo = repoWith({ 'notes.txt': `the release code is ${TOOL_CANARY}\n` });
    const script = writeScript(join(repo, '..'), 'canary', {
      name: 'canary',
      steps: [
        { tool_use: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
        {
          expect: { tool_result_contains: TOOL_CANARY },
          tool_use: [{ name: 'edit', input: { path: 'notes.txt', old_string: 'release code', new_string: 'release code (read)' } }],
        },
        { tool_use: [{ name: 'finish', input: { summary: `read ${TOOL_CANARY}` } }] },
      ],
    });
    const input = testInput({ repo, model: `scripted:${script}`, goal: `read the notes (${GOAL_CANARY})`, allowUnverified: true });
    runId = input.runId;
    const handle = await client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: runId, taskQueue: QUEUE, args: [input] });
    const r = await outcome(handle);
    expect(r.state, r.reason).toBe('succeeded');
    expect(r.turns).toBe(3);

    const raw = rawHistory(runId);
    expect(raw).toContain('WORKFLOW_EXECUTION_COMPLETED');
    const strings = readable(raw);
    expect(strings.some((s) => s === 'binary/encrypted')).toBe(true);
    for (const canary of [GOAL_CANARY, TOOL_CANARY])
      expect(
        strings.filter((s) => s.includes(canary)),
        canary,
      ).toEqual([]);
  });

  it('the codec server decodes the raw history for a holder of the token, and only for one', async () => {
    const payloads = payloadsOf(rawHistory(runId));
    expect(payloads.length).toBeGreaterThan(5);
    const post = (auth?: string) =>
      fetch(`${codecServer.url}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify({ payloads }),
      });
    const denied = await post();
    expect(denied.status).toBe(401);
    const ok = await post(`Bearer ${codecServer.token}`);
    expect(ok.status).toBe(200);
    const decoded = ((await ok.json()) as { payloads: { data?: string }[] }).payloads
      .map((p) => Buffer.from(p.data ?? '', 'base64').toString('utf8'))
      .join('\n');
    expect(decoded).toContain(GOAL_CANARY);
    expect(decoded).toContain(TOOL_CANARY);
  });

  it("attack: the codec's token is in no process's arguments or environment, and not in the UI's settings", async () => {
    const secrets = [codecServer.token, new URL(server.codecLogin!).searchParams.get('code')!];
    const seen: string[] = [];
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      for (const file of ['cmdline', 'environ']) {
        let text: string;
        try {
          text = readFileSync(`/proc/${pid}/${file}`, 'utf8');
        } catch {
          continue; // gone, or not ours to read
        }
        if (secrets.some((s) => text.includes(s))) seen.push(`${pid}/${file}: ${text.replace(/\0/g, ' ').slice(0, 200)}`);
      }
    }
    expect(seen).toEqual([]);
    // the dev server was told where the codec is, without a secret
    const cmdline = readFileSync(`/proc/${server.process.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[cmdline.indexOf('--ui-codec-endpoint') + 1]).toBe('/kiln-codec');
    const settings = await fetch(`${server.uiUrl}/api/v1/settings`);
    const body = await settings.text();
    expect(settings.status).toBe(200);
    expect(JSON.parse(body).Codec.Endpoint).toBe('/kiln-codec');
    for (const s of secrets) expect(body).not.toContain(s);
  });

  it("attack: a local process posting to the UI's codec path without the browser's cookie decodes nothing; the login link's cookie does", async () => {
    const payloads = payloadsOf(rawHistory(runId));
    const post = (cookie?: string) =>
      fetch(`${server.uiUrl}/kiln-codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...(cookie ? { cookie } : {}) },
        body: JSON.stringify({ payloads }),
      });
    expect((await post()).status).toBe(401);
    expect((await post('kiln-codec=guess')).status).toBe(401);
    expect((await post(`kiln-codec=${codecServer.token}`)).status).toBe(401);
    const wrong = await fetch(`${server.uiUrl}/kiln-codec/login?code=guess`, { redirect: 'manual' });
    expect(wrong.status).toBe(403);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    // control: the browser that opened the printed link
    const login = await fetch(server.codecLogin!, { redirect: 'manual' });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict; Path=\/kiln-codec\//);
    const ok = await post(cookie.split(';')[0]);
    expect(ok.status).toBe(200);
    const decoded = ((await ok.json()) as { payloads: { data?: string }[] }).payloads
      .map((p) => Buffer.from(p.data ?? '', 'base64').toString('utf8'))
      .join('\n');
    expect(decoded).toContain(GOAL_CANARY);
  });

  it('the CLI reads the run with the keys, and without them says which key it lacks', async () => {
    // the built CLI (npm test builds first), as a user runs it against this server
    const env = (over: Record<string, string>) => userEnv({ TEMPORAL_ADDRESS: server.address, ...over });
    const withKeys = await kiln(['wait', runId, '--json'], { env: env({ KILN_CODEC_KEYS_FILE: keysFile }) });
    expect(withKeys.code, withKeys.stderr).toBe(0);
    expect(JSON.parse(withKeys.stdout)).toMatchObject({ runId, state: 'succeeded', turns: 3 });
    const without = await kiln(['wait', runId, '--json'], { env: env({}) });
    expect(without.code).not.toBe(0);
    expect(without.stderr).toMatch(/^kiln: payload encrypted with key "k1", but no codec keys are configured here: set KILN_CODEC_KEYS_FILE/);
    expect(without.stderr).not.toContain('\n    at ');
  });

  it('a worker without the key refuses the run, naming the key it lacks', async () => {
    const queue = `${QUEUE}-nokey`;
    const keyless = await startWorker({
      connection: native,
      settings: { address: server.address, namespace: 'default', taskQueue: queue },
      deps: { ...defaultDeps(), hostQueue: `${queue}-host` },
      dataConverter: dataConverterFor(undefined),
    });
    try {
      const input = testInput({ repo: repoWith({ 'a.txt': 'a\n' }), model: 'scripted:/nonexistent.json', goal: GOAL_CANARY });
      const handle = await client.workflow.start<typeof kilnRun>('kilnRun', { workflowId: input.runId, taskQueue: queue, args: [input] });
      const deadline = Date.now() + 30_000;
      let message: string | undefined;
      while (!message) {
        const events = (await handle.fetchHistory()).events ?? [];
        message = events.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes?.failure?.message ?? undefined;
        if (Date.now() > deadline) throw new Error('the keyless worker did not fail the workflow task');
        if (!message) await new Promise((r) => setTimeout(r, 200));
      }
      expect(message).toMatch(/encrypted with key "k1", but no codec keys are configured here: set KILN_CODEC_KEYS_FILE/);
      await handle.terminate('test over');
    } finally {
      await keyless.shutdown();
    }
  });

  it.skipIf(!existsSync(CHROMIUM))('the Web UI, through the codec server, shows the canary (headless Chromium)', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      // the link `kiln dev` prints: it sets the cookie the guard asks codec requests for
      await page.goto(server.codecLogin!);
      await page.goto(`${server.uiUrl}/namespaces/default/workflows/${runId}`);
      await page.getByText(GOAL_CANARY).first().waitFor({ timeout: 60_000 });
      const shot = join(artifactsDir('encrypted-history'), 'web-ui-decoded.png');
      await page.screenshot({ path: shot, fullPage: true });
      process.stdout.write(`Web UI screenshot: ${shot}\n`);
      expect(existsSync(shot)).toBe(true);
    } finally {
      await browser.close();
    }
  });
});

if (!existsSync(CHROMIUM)) process.stdout.write(`encrypted-history: the Web UI check is skipped: no Chromium at ${CHROMIUM}\n`);
