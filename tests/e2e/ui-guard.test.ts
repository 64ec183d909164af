/**
 * The Web UI side of the setup attack, against the real dev server and UI that `kiln dev`
 * starts: a page or process that fetched the UI's CSRF token started a `kilnRun` through the UI's
 * HTTP API, and the UI took foreign Host and Origin headers. Now the UI sits behind Kiln's guard.
 */
import { Connection } from '@temporalio/client';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../src/temporal/binary.js';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { uiRequestProblem } from '../../src/temporal/ui-guard.js';

const binary = findTemporalCli();
let server: DevServer;
let ui: URL;

async function send(path: string, init: { method?: string; headers?: Record<string, string>; body?: string; port?: number } = {}) {
  // node's fetch will not forge Host; a raw request can
  const { request } = await import('node:http');
  return new Promise<{ status: number; guard: string | undefined; body: string }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: init.port ?? Number(ui.port), path, method: init.method ?? 'GET', headers: { host: ui.host, ...init.headers } },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, guard: res.headers['x-kiln-guard'] as string | undefined, body }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

const START = '/api/v1/namespaces/default/workflows/evil-run';
const startBody = JSON.stringify({ workflowId: 'evil-run', workflowType: { name: 'kilnRun' }, taskQueue: { name: 'kiln' }, input: { payloads: [] } });

describe.skipIf(!binary)('the Web UI of kiln dev', () => {
  beforeAll(async () => {
    const home = mkdtempSync(join(tmpdir(), 'kiln-ui-'));
    server = await startDevServer({ binary: binary!, dbFile: join(home, 'temporal.db'), port: await freePort(), uiPort: await freePort() });
    ui = new URL(server.uiUrl);
    // the UI starts after the frontend: wait until it answers through the guard
    const deadline = Date.now() + 60_000;
    while ((await send('/api/v1/settings').catch(() => ({ status: 0 }))).status !== 200) {
      if (Date.now() > deadline) throw new Error('the Web UI did not come up');
      await new Promise((r) => setTimeout(r, 300));
    }
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('listens on loopback only', () => {
    expect(ui.hostname).toBe('127.0.0.1');
    expect(server.address.startsWith('127.0.0.1:')).toBe(true);
  });

  it('attack: a start-workflow POST with a forged Origin is refused', async () => {
    const r = await send(START, { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'application/json' }, body: startBody });
    expect(r.status).toBe(403);
    expect(r.guard).toBe('refused');
    expect(r.body).toMatch(/foreign Origin/);
  });

  it('attack: the same POST with the right Origin is refused too: starting workflows from the UI is off', async () => {
    const settings = await send('/api/v1/settings');
    const r = await send(START, { method: 'POST', headers: { origin: ui.origin, 'content-type': 'application/json' }, body: startBody });
    expect(settings.status).toBe(200);
    expect(r.status).toBe(403);
    expect(r.body).toMatch(/write actions from the Web UI are off/);
  });

  it('attack: a DNS-rebinding request (foreign Host) is refused, even a read', async () => {
    const r = await send('/api/v1/settings', { headers: { host: `attacker.example:${ui.port}` } });
    expect(r.status).toBe(403);
    expect(r.body).toMatch(/foreign Host/);
  });

  it("attack: the UI's own port, read from the server's argv, is not on the host's loopback", async () => {
    expect(server.exposure).toBeUndefined();
    const argv = readFileSync(`/proc/${server.process.pid}/cmdline`, 'utf8').split('\0');
    const inner = Number(argv[argv.indexOf('--ui-port') + 1]);
    expect(inner).toBeGreaterThan(0);
    expect(inner).not.toBe(Number(ui.port));
    const attempts = [
      send('/api/v1/settings', { port: inner, headers: { host: `attacker.example:${inner}` } }),
      send(START, {
        port: inner,
        method: 'POST',
        headers: { host: `attacker.example:${inner}`, origin: 'http://attacker.example', 'content-type': 'application/json' },
        body: startBody,
      }),
    ];
    for (const r of await Promise.allSettled(attempts)) {
      expect(r.status).toBe('rejected');
      expect(String((r as PromiseRejectedResult).reason)).toMatch(/ECONNREFUSED/);
    }
    const c = await Connection.connect({ address: server.address });
    await expect(c.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: 'evil-run' } })).rejects.toThrow(/not found/i);
    await c.close();
  });

  it('control: reads with the right Host pass, and an approval signal reaches the UI server', async () => {
    const settings = await send('/api/v1/settings', { headers: { referer: `${ui.origin}/namespaces/default/workflows` } });
    expect(settings.status).toBe(200);
    expect(settings.guard).toBeUndefined();
    expect(JSON.parse(settings.body)).toHaveProperty('Auth');
    const approve = await send('/api/v1/namespaces/default/workflows/no-such-run/signal/approve', {
      method: 'POST',
      headers: { origin: ui.origin, 'content-type': 'application/json' },
      body: '{}',
    });
    // the UI server answers (no such run, or its own CSRF check): the guard let it through
    expect(approve.guard).toBeUndefined();
  });
});

describe('uiRequestProblem', () => {
  it('allows the approval paths and queries, refuses the other writes', () => {
    const ok = (method: string, path: string) => uiRequestProblem({ method, path, host: '127.0.0.1:8233', origin: 'http://127.0.0.1:8233' }, 8233);
    expect(ok('POST', '/api/v1/namespaces/default/workflows/run-1/update/approve')).toBeUndefined();
    expect(ok('POST', '/api/v1/namespaces/default/workflows/run-1/signal/human')).toBeUndefined();
    expect(ok('POST', '/api/v1/namespaces/default/workflows/run-1/query/status')).toBeUndefined();
    expect(ok('POST', '/api/v1/namespaces/default/workflows/run-1/terminate')).toMatch(/write actions/);
    expect(ok('POST', '/api/v1/namespaces/default/workflows/run-1/signal/other')).toMatch(/write actions/);
    expect(ok('DELETE', '/api/v1/namespaces/default/workflows/run-1')).toMatch(/write actions/);
    expect(ok('POST', '/api/v1/namespaces/default/batch-operations/x')).toMatch(/write actions/);
    expect(uiRequestProblem({ method: 'GET', path: '/', host: 'localhost:8233', origin: 'https://localhost:8233' }, 8233)).toMatch(/foreign Origin/);
  });
});
