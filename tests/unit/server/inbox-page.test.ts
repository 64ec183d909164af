/**
 * The inbox page in headless Chromium over the in-process API and a fake run store (no
 * Temporal): a two-approver call shows its progress and who approved, and is not approvable
 * again by someone who already did; a reason being typed survives a live redraw caused by
 * another run's event stream; a rejection without a reason is refused in the page.
 */
import { serve, type ServerType } from '@hono/node-server';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { pending } from '../../helpers/fake-run-backend.js';
import { artifactsDir } from '../../helpers/artifacts.js';
import { harness } from './harness.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));

let browser: Browser | undefined;
beforeAll(async () => {
  if (CHROMIUM)
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});
afterAll(async () => {
  await browser?.close();
});

async function served(h: ReturnType<typeof harness>): Promise<{ base: string; server: ServerType }> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: h.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
  await page.locator('#who').filter({ hasText: 'tenant' }).waitFor();
}

const cardOf = (page: Page, runId: string) => page.locator(`article.approval[data-key^="${runId}/"]`);

describe.skipIf(!CHROMIUM)('the inbox page (headless Chromium, fake run store)', () => {
  it('a two-approver call: "1 of 2 (bob)", not approvable again by bob; carol, the second approver, may', async () => {
    const h = harness();
    const carol = h.tokens.create({ tenant: 'acme', user: 'carol', role: 'approver' }).token;
    h.backend.add('r1', 'acme', {
      repo: h.acmeRepo,
      state: { pendingApprovals: [{ ...pending('appr-1'), approvals: { needed: 2, authenticated: true, by: ['bob'] } }] },
    });
    const { base, server } = await served(h);
    const page = await browser!.newPage();
    try {
      await signIn(page, base, h.t.acmeApprover);
      const card = cardOf(page, 'r1');
      await card.waitFor();
      expect(await card.locator('.votes').innerText()).toBe('Approvals: 1 of 2 (bob)');
      await expect.poll(() => card.innerText()).toContain('You approved this already');
      expect(await card.getByRole('button', { name: 'Approve once' }).isDisabled()).toBe(true);
      // it needs two approvers every time it runs: no grant for the rest of the run is offered
      expect(await card.getByRole('button', { name: 'Approve for the run' }).count()).toBe(0);
      // a change of mind is still possible
      expect(await card.getByRole('button', { name: 'Reject' }).isEnabled()).toBe(true);
      await page.screenshot({ path: join(artifactsDir('inbox-page'), 'two-approvers-bob.png'), fullPage: true });

      // control: another approver of the tenant sees the same progress and can approve
      await page.click('#signout');
      await signIn(page, base, carol);
      await card.waitFor();
      expect(await card.locator('.votes').innerText()).toBe('Approvals: 1 of 2 (bob)');
      expect(await card.innerText()).not.toContain('You approved this already');
      await card.getByRole('button', { name: 'Approve once' }).click();
      await expect.poll(() => h.backend.decisions.length).toBe(1);
      expect(h.backend.decisions[0]!.d).toMatchObject({ approvalId: 'appr-1', approve: true, by: 'carol' });
    } finally {
      await page.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('a live redraw from one run keeps the reason typed in another card; an empty reason is refused in the page', async () => {
    const h = harness();
    h.backend.add('r1', 'acme', { repo: h.acmeRepo });
    h.backend.add('r2', 'acme', { repo: h.acmeRepo, state: { pendingApprovals: [pending('appr-7')] } });
    const { base, server } = await served(h);
    const page = await browser!.newPage();
    try {
      await signIn(page, base, h.t.acmeApprover);
      await cardOf(page, 'r2').waitFor();
      // a call one approver decides may be allowed for the rest of the run
      expect(await cardOf(page, 'r2').getByRole('button', { name: 'Approve for the run' }).count()).toBe(1);
      const reject = cardOf(page, 'r2').getByRole('button', { name: 'Reject' });
      await reject.click();
      await page.locator('#status', { hasText: 'A rejection needs a reason' }).waitFor();
      expect(h.backend.decisions).toEqual([]);

      await cardOf(page, 'r2').getByLabel('Reason to reject').fill('not this package');
      // r1 moves on: its event stream says so, the page redraws r1's card well before its 15 s refresh
      h.backend.runs.get('r1')!.state!.plan = [{ step: 'a step the stream brought', status: 'in_progress' }];
      await cardOf(page, 'r1').getByText('a step the stream brought').waitFor({ timeout: 5_000 });
      expect(await cardOf(page, 'r2').getByLabel('Reason to reject').inputValue()).toBe('not this package');
      await reject.click();
      await expect.poll(() => h.backend.decisions.length).toBe(1);
      expect(h.backend.decisions[0]).toMatchObject({ runId: 'r2', d: { approvalId: 'appr-7', approve: false, reason: 'not this package', by: 'bob' } });

      // the page says so once the server answered; the end below must not race that line for #status
      await page.locator('#status', { hasText: 'Rejected appr-7' }).waitFor({ timeout: 5_000 });
      // the run's end arrives through its stream too
      h.backend.close('r2', { state: 'failed' });
      await page.locator('#status', { hasText: 'r2 ended: failed (SCRIPTED model)' }).waitFor({ timeout: 5_000 });
    } finally {
      await page.close();
      await new Promise((r) => server.close(r));
    }
  });

  it("a run that starts to wait after the page opened shows through the tenant's stream, before the 15 s refresh; another tenant's does not", async () => {
    const h = harness();
    const { base, server } = await served(h);
    const page = await browser!.newPage();
    try {
      await signIn(page, base, h.t.acmeApprover);
      h.backend.add('globex-1', 'globex', { repo: h.globexRepo, state: { pendingApprovals: [pending('appr-9')] } });
      h.backend.add('late-1', 'acme', { repo: h.acmeRepo, state: { pendingApprovals: [pending('appr-3')] } });
      await cardOf(page, 'late-1').waitFor({ timeout: 5_000 });
      expect(await cardOf(page, 'globex-1').count()).toBe(0);
    } finally {
      await page.close();
      await new Promise((r) => server.close(r));
    }
  });
});

if (!CHROMIUM) console.log("inbox page test skipped: no Chromium binary (/usr/bin/chromium); install Debian's `chromium` to run it");
