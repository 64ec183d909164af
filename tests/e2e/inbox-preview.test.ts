/**
 * The inbox draws an edit's proposed change (the approval's bounded, redacted diff preview) in
 * headless Chromium, as text: a preview holding markup shows it, never runs it. Served by the
 * real app over the fake run store, so no Temporal server is needed.
 */
import { serve, type ServerType } from '@hono/node-server';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/temporal/dev-server.js';
import { pending } from '../helpers/fake-run-backend.js';
import { harness } from '../unit/server/harness.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));

const PREVIEW = [
  '--- src/view.ts',
  '+++ src/view.ts',
  '@@ -1,2 +1,2 @@',
  ' export function view() {',
  '-  return "<p>old</p>";',
  '+  return "<img src=x onerror=document.title=\'pwned\'>";',
].join('\n');

let browser: Browser | undefined;
let server: ServerType | undefined;
let base = '';
const h = harness();

beforeAll(async () => {
  if (!CHROMIUM) return;
  h.backend.add('r-edit', 'acme', {
    repo: h.acmeRepo,
    state: {
      pendingApprovals: [
        { ...pending('ap-1'), tool: 'edit', summary: 'edit src/view.ts', segments: undefined, rule: 'approvals.two-person', preview: PREVIEW },
      ],
    },
  });
  h.backend.add('r-cmd', 'acme', { repo: h.acmeRepo });
  const port = await freePort();
  await new Promise<void>((resolve) => {
    server = serve({ fetch: h.app.fetch, port, hostname: '127.0.0.1' }, () => resolve());
  });
  base = `http://127.0.0.1:${port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
});

describe.skipIf(!CHROMIUM)('the inbox shows the change an edit would make', () => {
  it('the edit card shows its preview as text (markup in it is not run); a command card has none', async () => {
    const page = await browser!.newPage();
    await page.goto(`${base}/`);
    await page.fill('#token', h.t.acmeApprover);
    await page.click('#login button[type=submit]');
    const edit = page.locator('article.approval[data-key="r-edit/ap-1"]');
    await edit.waitFor({ timeout: 30_000 });
    expect(await edit.locator('pre[aria-label="the change it would make"]').innerText()).toBe(PREVIEW);
    expect(await edit.locator('h4', { hasText: 'The change it would make' }).count()).toBe(1);
    // drawn as text: the <img> in the diff is not an element, its handler never ran
    expect(await edit.locator('img').count()).toBe(0);
    expect(await page.title()).not.toBe('pwned');
    const cmd = page.locator('article.approval[data-key="r-cmd/appr-1"]');
    await cmd.waitFor();
    expect(await cmd.locator('pre[aria-label="the change it would make"]').count()).toBe(0);
  });
});
