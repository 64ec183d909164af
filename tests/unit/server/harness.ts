/** An in-process `kiln serve` over a fake run store: tokens in a temp KILN_HOME, two tenants. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';
import { createApp } from '../../../src/server/app.js';
import { TokenStore } from '../../../src/server/tokens.js';
import type { TenantConfig } from '../../../src/server/tenants.js';
import { canonicalPath } from '../../../src/server/tenants.js';
import { FakeRunBackend } from '../../helpers/fake-run-backend.js';
import { exampleRepo } from '../../helpers/repo.js';

export const SCRIPT = 'scripted:examples/scripts/revoked-session.json';

/** every test's home and repos, deleted when it ends (each harness() makes three temp dirs) */
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function harness(over: { acme?: Partial<TenantConfig>; now?: () => Date; allowScriptedModels?: boolean } = {}) {
  const home = mkdtempSync(join(tmpdir(), 'kiln-serve-test-'));
  const tokens = new TokenStore(join(home, 'server', 'tokens.json'));
  const backend = new FakeRunBackend();
  const acmeRepo = exampleRepo('kiln-serve-acme-', home);
  const globexRepo = exampleRepo('kiln-serve-globex-', home);
  made.push(home, dirname(acmeRepo), dirname(globexRepo));
  const tenant = (repos: string[], o: Partial<TenantConfig> = {}): TenantConfig => ({
    repos: repos.map(canonicalPath),
    maxConcurrentRuns: 5,
    usdPerDay: 100,
    requestsPerMinute: 1000,
    ...o,
  });
  const tenants = new Map<string, TenantConfig>([
    ['acme', tenant([acmeRepo], over.acme)],
    ['globex', tenant([globexRepo])],
  ]);
  const approvalKey = randomBytes(32);
  // these tests start runs with a scripted model, as a development server does
  const app = createApp({
    backend,
    tokens,
    tenants: () => tenants,
    approvalKey,
    pollMs: 20,
    now: over.now,
    allowScriptedModels: over.allowScriptedModels ?? true,
  });
  const tok = (tenant: string, user: string, role: string) => tokens.create({ tenant, user, role }).token;
  const t = {
    acmeRunner: tok('acme', 'alice', 'runner'),
    acmeApprover: tok('acme', 'bob', 'approver'),
    acmeViewer: tok('acme', 'vera', 'viewer'),
    globexRunner: tok('globex', 'gina', 'runner'),
    globexApprover: tok('globex', 'gus', 'approver'),
  };
  const call = (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method,
      headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  return { home, tokens, backend, app, tenants, approvalKey, acmeRepo, globexRepo, t, call };
}
