/**
 * The caller's tenant's budget ledger: read with `read`. No token may change a limit: limits are the
 * operator's (`kiln budget set` on a host that reaches Temporal), so a tenant cannot raise its own.
 */
import { HttpError } from '../http-errors.js';
import { need, type Api, type RouteOptions } from '../request.js';

export function addBudgetRoutes(api: Api, o: RouteOptions): void {
  api.get('/budget', async (c) => {
    const id = need(c, 'read');
    const view = await o.backend.budget(id.tenant);
    return c.json(view ?? { tenant: id.tenant, scopes: [], open: 0, overruns: 0 });
  });
  const refuse = () => {
    throw new HttpError(403, 'forbidden', 'budget limits are set by the operator (kiln budget set), not through the API');
  };
  api.put('/budget', refuse);
  api.post('/budget', refuse);
  api.patch('/budget', refuse);
}
