/** The approval inbox: three static files from web/, served with a CSP that allows only themselves. */
import type { Context } from 'hono';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// src/server/ under vitest, dist/src/server/ when built: web/ is at the package root either way
const WEB_DIR = [new URL('../../web/', import.meta.url), new URL('../../../web/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((d) => existsSync(`${d}inbox.html`));

export const INBOX_CSP = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  connectSrc: ["'self'"],
  imgSrc: ["'self'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};

const TYPES = { 'inbox.html': 'text/html; charset=utf-8', 'inbox.js': 'text/javascript; charset=utf-8', 'inbox.css': 'text/css; charset=utf-8' } as const;

export async function inboxAsset(c: Context, name: keyof typeof TYPES): Promise<Response> {
  if (!WEB_DIR) return c.text('the inbox files (web/) are missing from this install', 500);
  return c.body(await readFile(`${WEB_DIR}${name}`, 'utf8'), 200, { 'Content-Type': TYPES[name], 'Cache-Control': 'no-store' });
}
