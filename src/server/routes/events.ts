/** Server-sent events: one run's log as it grows, and the tenant's open runs as they change (sse.ts). */
import { need, ownRun, type Api, type RouteOptions } from '../request.js';
import { runEvents, tenantEvents } from '../sse.js';

export function addEventRoutes(api: Api, o: RouteOptions): void {
  api.get('/runs/:id/events', async (c) => {
    need(c, 'read');
    const run = await ownRun(c, o);
    const last = Number(c.req.header('last-event-id') ?? c.req.query('lastEventId') ?? 0);
    return runEvents(c, o.backend, run, Number.isFinite(last) && last > 0 ? last : 0, o.pollMs ?? 500);
  });

  api.get('/events', (c) => {
    const id = need(c, 'read');
    return tenantEvents(c, o.backend, { tenant: id.tenant, open: true, limit: 100 }, o.pollMs ?? 500);
  });
}
