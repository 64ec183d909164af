/** The approval inbox's page and its two files, which need no token: the page asks for one. */
import type { Hono } from 'hono';
import { inboxAsset } from '../inbox.js';
import type { Env } from '../request.js';

export function addInboxRoutes(app: Hono<Env>): void {
  app.get('/', (c) => inboxAsset(c, 'inbox.html'));
  app.get('/inbox.js', (c) => inboxAsset(c, 'inbox.js'));
  app.get('/inbox.css', (c) => inboxAsset(c, 'inbox.css'));
  // browsers ask for it unprompted: an empty answer, not a 404 in their console
  app.get('/favicon.ico', (c) => c.body(null, 204));
}
