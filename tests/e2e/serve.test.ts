/**
 * `kiln serve` end to end: a real dev server and worker (`kiln dev`), a run started by alice, a
 * runner, with the README's curl command (fetch where there is no curl); it waits for an
 * approval; bob, an approver of the same tenant, signs in to the inbox in headless Chromium and
 * approves it; the page sees the run finish through its event stream. Then two more runs: one
 * bob rejects with a reason, one he approves for the run. The model is SCRIPTED
 * (examples/scripts/revoked-session.json), not a real one. Screenshots are kept in
 * test-artifacts/serve/ (KILN_TEST_ARTIFACTS) and their paths printed.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { artifactsDir } from '../helpers/artifacts.js';
import { ROOT, exampleRepo } from '../helpers/repo.js';
import { GOAL, SCRIPT, command, kiln, spawnKiln, until, userEnv, type Live } from './cli.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
const CURL = ['/usr/bin/curl', '/bin/curl', '/usr/local/bin/curl'].find((p) => existsSync(p));

let dev: Live | undefined;
let serve: Live | undefined;
let browser: Browser | undefined;
let env: NodeJS.ProcessEnv;
let base: string;
let apiPort: number;
let home: string | undefined;
let repo: string | undefined;
let shots: string;
const tokens: Record<string, string> = {};

async function token(user: string, role: string, tenant = 'acme'): Promise<string> {
  const r = await kiln(['token', 'create', '--tenant', tenant, '--user', user, '--role', role], { env });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

const api = async (path: string, tok: string, init: RequestInit = {}) => {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${tok}`, 'Content-Type': 'application/json', ...(init.headers as Record<string, string>) },
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

/**
 * The README's `curl -s -X POST localhost:8080/runs …` as written there, on this test's port and
 * repo, with the SCRIPTED model the README says to add without an API key.
 */
function readmeCurl(): { script: string; body: Record<string, unknown> } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const m = /^curl -s -X POST localhost:8080\/runs .*\\\n.* -d '(\{.*\})'$/m.exec(readme);
  if (!m) throw new Error('README.md no longer shows `curl -s -X POST localhost:8080/runs … -d {…}`: keep this test and the README in step');
  const body = { ...(JSON.parse(m[1]!) as Record<string, unknown>), repo, model: SCRIPT };
  const script = m[0].replace('localhost:8080', `localhost:${apiPort}`).replace(m[1]!, JSON.stringify(body));
  return { script, body };
}

async function startRun(key: string): Promise<{ status: number; body: Record<string, any>; via: string; sent: Record<string, unknown> }> {
  const { script, body } = readmeCurl();
  if (!CURL) {
    const r = await api('/runs', tokens.alice!, { method: 'POST', headers: { 'Idempotency-Key': key }, body: JSON.stringify(body) });
    return { ...r, via: 'fetch (no curl here)', sent: body };
  }
  // status on a line of its own after the body, so a failure shows both
  const r = await command('bash', ['-c', `${script.replace('Idempotency-Key: fix-42', `Idempotency-Key: ${key}`)} -w '\\n%{http_code}'`], {
    env: { ...env, ALICE: tokens.alice! },
  });
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout.trim().split('\n');
  return { status: Number(lines.at(-1)), body: JSON.parse(lines.slice(0, -1).join('\n')) as Record<string, any>, via: 'curl', sent: body };
}

async function signIn(page: Page, tok: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.fill('#token', tok);
  await page.click('#login button[type=submit]');
}

const cardOf = (page: Page, runId: string) => page.locator(`article.approval[data-key^="${runId}/"]`);

function auditOf(runId: string): Array<Record<string, any>> {
  const file = join(repo!, '.kiln', 'runs', runId, 'audit.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);
}

beforeAll(async () => {
  if (!CHROMIUM) return;
  home = mkdtempSync(join(tmpdir(), 'kiln-e2e-serve-'));
  env = userEnv({ KILN_HOME: home });
  const port = await freePort();
  dev = spawnKiln(['dev', '--port', String(port), '--ui-port', String(await freePort()), '--db', join(home, 'temporal.db')], { env });
  await dev.waitFor('Ctrl-C stops everything', 90_000);
  env = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` };
  repo = exampleRepo('kiln-e2e-serve-', home);
  mkdirSync(join(home, 'server'), { recursive: true });
  writeFileSync(
    join(home, 'server', 'tenants.json'),
    JSON.stringify({ tenants: { acme: { repos: [repo], maxConcurrentRuns: 3, usdPerDay: 50 }, globex: { repos: [] } } }),
  );
  tokens.alice = await token('alice', 'runner');
  tokens.bob = await token('bob', 'approver');
  tokens.gina = await token('gina', 'approver', 'globex');
  apiPort = await freePort();
  serve = spawnKiln(['serve', '--port', String(apiPort), '--allow-scripted-model'], { env });
  await serve.waitFor('API and inbox on', 60_000);
  base = `http://127.0.0.1:${apiPort}`;
  shots = artifactsDir('serve');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await serve?.kill();
  await dev?.kill();
  // the runs' worktrees and artifacts live in the repo and the home: nothing of them is kept
  for (const dir of [home, repo && dirname(repo)]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!CHROMIUM)('kiln serve + inbox in headless Chromium (SCRIPTED model)', () => {
  it('alice starts a run with the README curl; bob approves it in the inbox; the page sees it finish; both are in the record', async () => {
    const t0 = Date.now();
    const start = await startRun('e2e-1');
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    const runId = start.body.runId as string;
    expect(start.body).toMatchObject({ created: true, startedBy: 'alice', scripted: true });
    // the same key and body: the same run, nothing new started
    const again = await api('/runs', tokens.alice!, { method: 'POST', headers: { 'Idempotency-Key': 'e2e-1' }, body: JSON.stringify(start.sent) });
    expect(again).toMatchObject({ status: 200, body: { runId, created: false } });

    await until(`${runId} waits for an approval`, async () => ((await api('/approvals', tokens.bob!)).body.approvals as unknown[]).length > 0, 120_000);
    const tApproval = Date.now();
    // figures for the report: how long the inbox's main read takes against a real server
    const reads: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      await api('/approvals', tokens.bob!);
      reads.push(performance.now() - t);
    }
    reads.sort((a, b) => a - b);
    // another tenant sees neither the run nor its approval
    expect((await api(`/runs/${runId}`, tokens.gina!)).status).toBe(404);
    expect((await api('/approvals', tokens.gina!)).body.approvals).toEqual([]);

    // what the card must show, as the API gives it: the policy's reason, the parsed command, the plan, the last turns
    const item = ((await api('/approvals', tokens.bob!)).body.approvals as Array<Record<string, any>>).find((a) => a.runId === runId)!;
    expect(item.approval.segments.map((x: { text: string }) => x.text)).toContain('npm run lint');
    expect(item.plan.map((p: { step: string }) => p.step)).toContain('Find the session lookup');
    expect(item.recentLog.length).toBeGreaterThan(0);

    const page = await browser!.newPage({ viewport: { width: 1200, height: 1000 } });
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    await signIn(page, tokens.bob!);
    const card = cardOf(page, runId);
    await card.waitFor({ timeout: 30_000 });
    // locators, not page functions: the inbox's CSP (no eval) applies to the test as to a user
    await card
      .locator('pre[aria-label="diff so far"]')
      .filter({ hasNotText: /^loading/ })
      .waitFor();
    const text = await card.innerText();
    expect(text).toContain('SCRIPTED model');
    expect(text).toContain(runId);
    expect(text).toContain('started by alice');
    expect(text).toContain(`Why it asks: ${item.approval.reason} (${item.approval.rule})`);
    expect(text).toContain('npm run lint');
    for (const p of item.plan as Array<{ step: string; status: string }>) expect(text).toContain(`[${p.status}] ${p.step}`);
    expect(text).toContain((item.recentLog as Array<{ text: string }>).at(-1)!.text.split('\n')[0]);
    expect(await page.locator('#who').textContent()).toContain('bob');
    const before = join(shots, '1-approval-waiting.png');
    await page.screenshot({ path: before, fullPage: true });
    // the README's picture: the top of the page, the card as a person first sees it
    const readmeShot = join(shots, 'inbox.png');
    await page.setViewportSize({ width: 1000, height: 760 });
    await page.screenshot({ path: readmeShot });
    await page.setViewportSize({ width: 1200, height: 1000 });

    const tClick = Date.now();
    await card.getByRole('button', { name: 'Approve once' }).click();
    await page.locator('#status', { hasText: `${runId} ended: succeeded (SCRIPTED model)` }).waitFor({ timeout: 180_000 });
    const tEnded = Date.now();
    // only the run's event stream says "ended" (the 15 s refresh does not)
    expect(await page.locator('#status').textContent()).toBe(`${runId} ended: succeeded (SCRIPTED model)`);
    await page.locator(`tr[data-run="${runId}"] .phase`, { hasText: /^succeeded$/ }).waitFor({ timeout: 30_000 });
    expect(await card.count()).toBe(0);
    const after = join(shots, '2-run-succeeded.png');
    await page.screenshot({ path: after, fullPage: true });
    console.log(`kiln serve e2e screenshots (SCRIPTED model run): ${before} ${readmeShot} ${after}`);
    console.log(
      `kiln serve e2e timings (SCRIPTED model; started with ${start.via}): start → approval pending ${tApproval - t0} ms; approve click → the page's stream says ended ${tEnded - tClick} ms; GET /approvals median ${reads[5]!.toFixed(1)} ms, max ${reads[9]!.toFixed(1)} ms (10 calls, 1 open run)`,
    );
    expect(consoleErrors).toEqual([]);
    await page.close();

    const done = await api(`/runs/${runId}`, tokens.alice!);
    expect(done.body.result).toMatchObject({ state: 'succeeded', scripted: true });
    expect(done.body.run.startedBy).toBe('alice');
    const audit = auditOf(runId);
    // both people, as the worker checked them: alice started it, bob approved it, each signed by the server
    expect(audit.find((a) => a.kind === 'start')?.identity, JSON.stringify(audit)).toEqual({ kind: 'authenticated', name: 'alice', tenant: 'acme' });
    const approval = audit.find((a) => a.kind === 'approval' && a.decision !== 'held');
    expect(approval, JSON.stringify(audit)).toBeDefined();
    expect(approval!.identity).toMatchObject({ kind: 'authenticated', name: 'bob', tenant: 'acme' });
    const verified = await kiln(['audit', 'verify', runId, '--repo', repo!], { env });
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/ok, \d+ entries/);
    // the artifacts are readable through the API by the tenant
    const names = (await api(`/runs/${runId}/artifacts`, tokens.bob!)).body.artifacts.map((a: { name: string }) => a.name);
    expect(names).toEqual(expect.arrayContaining(['audit.jsonl', 'patch.diff']));
  }, 400_000);

  it('bob rejects one run with a reason (an empty one is refused first) and approves another for the run', async () => {
    const started = await Promise.all(
      ['e2e-reject', 'e2e-for-run'].map(async (key) => {
        const r = await api('/runs', tokens.alice!, {
          method: 'POST',
          headers: { 'Idempotency-Key': key },
          body: JSON.stringify({ repo, goal: GOAL, model: SCRIPT }),
        });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        return r.body.runId as string;
      }),
    );
    const [rejected, forRun] = started as [string, string];
    const waiting = async () => ((await api('/approvals', tokens.bob!)).body.approvals as Array<{ runId: string }>).map((a) => a.runId);
    await until(
      'both runs wait for an approval',
      async () => {
        const w = await waiting();
        return started.every((id) => w.includes(id));
      },
      120_000,
    );

    const page = await browser!.newPage({ viewport: { width: 1200, height: 1000 } });
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    await signIn(page, tokens.bob!);
    await cardOf(page, rejected).waitFor({ timeout: 30_000 });
    await cardOf(page, forRun).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: join(shots, '3-two-waiting.png'), fullPage: true });

    // an empty reason: refused in the page, nothing sent, the approval still waits
    const reject = cardOf(page, rejected).getByRole('button', { name: 'Reject' });
    await reject.click();
    await page.locator('#status', { hasText: 'A rejection needs a reason' }).waitFor();
    expect(await waiting()).toContain(rejected);
    const reason = 'no lint run today: the linter config is being replaced';
    await cardOf(page, rejected).getByLabel('Reason to reject').fill(reason);
    await reject.click();
    await page.locator('#status', { hasText: new RegExp(`^Rejected \\S+ in ${rejected} as bob`) }).waitFor({ timeout: 30_000 });
    const rejection = await until(
      `${rejected}: the rejection in the audit`,
      async () => auditOf(rejected).find((a) => a.kind === 'approval' && a.decision === 'rejected'),
      60_000,
    );
    expect(rejection).toMatchObject({ by: 'bob', note: reason, identity: { kind: 'authenticated', name: 'bob', tenant: 'acme' } });
    // the script expected the lint to run: the rejected run goes no further; alice ends it
    const cancel = await api(`/runs/${rejected}/cancel`, tokens.alice!, { method: 'POST', body: JSON.stringify({ reason: 'rejected in the inbox' }) });
    expect([202, 409], JSON.stringify(cancel.body)).toContain(cancel.status);
    await page.locator('#status', { hasText: `${rejected} ended: ` }).waitFor({ timeout: 120_000 });

    await cardOf(page, forRun).getByRole('button', { name: 'Approve for the run' }).click();
    await page.locator('#status', { hasText: `${forRun} ended: succeeded (SCRIPTED model)` }).waitFor({ timeout: 180_000 });
    await page.screenshot({ path: join(shots, '4-rejected-and-approved-for-the-run.png'), fullPage: true });
    const granted = auditOf(forRun).find((a) => a.kind === 'approval' && a.decision === 'approved');
    expect(granted, JSON.stringify(auditOf(forRun))).toMatchObject({ scope: 'run', by: 'bob', identity: { kind: 'authenticated', name: 'bob' } });
    expect((await api(`/runs/${forRun}`, tokens.alice!)).body.result).toMatchObject({ state: 'succeeded', scripted: true });
    for (const id of started) expect((await kiln(['audit', 'verify', id, '--repo', repo!], { env })).code).toBe(0);
    expect(consoleErrors).toEqual([]);
    await page.close();
  }, 400_000);
});

describe.skipIf(!CHROMIUM)('kiln token and kiln serve from the command line', () => {
  it('lists tokens without their secrets; a revoked token is refused at once; a broken tenants file stops the start', async () => {
    const list = await kiln(['token', 'list', '--json'], { env });
    expect(list.code, list.stderr).toBe(0);
    const all = JSON.parse(list.stdout) as Array<{ id: string; user: string }>;
    expect(all.map((t) => t.user).sort()).toEqual(['alice', 'bob', 'gina']);
    for (const secret of Object.values(tokens)) expect(list.stdout).not.toContain(secret);
    expect(list.stdout).not.toContain('sha256');
    expect((await api('/me', tokens.gina!)).status).toBe(200);
    const revoke = await kiln(['token', 'revoke', all.find((t) => t.user === 'gina')!.id], { env });
    expect(revoke.code, revoke.stderr).toBe(0);
    expect((await api('/me', tokens.gina!)).status).toBe(401);

    const broken = join(home, 'broken-tenants.json');
    writeFileSync(broken, JSON.stringify({ tenants: { acme: { repos: ['relative/path'] } } }));
    const r = await kiln(['serve', '--port', '0', '--tenants', broken], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/tenants\.acme\.repos\.0: repos must be absolute paths/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

if (!CHROMIUM) console.log("kiln serve e2e skipped: no Chromium binary (/usr/bin/chromium); install Debian's `chromium` to run it");
