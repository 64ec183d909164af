/** The runs of the caller's tenant: list them, read one, cancel one, read its patch (POST /runs is start-run.ts). */
import { currentPatch } from '../../client/patch.js';
import { badInput, HttpError, notFound } from '../http-errors.js';
import { body, need, ownRun, repoOf, summary, type Api, type RouteOptions } from '../request.js';
import { Cancel, ListRuns } from '../schemas.js';

export function addRunRoutes(api: Api, o: RouteOptions): void {
  api.get('/runs', async (c) => {
    const id = need(c, 'read');
    const q = ListRuns.safeParse(c.req.query());
    if (!q.success) throw badInput(q.error, 'query');
    const runs = await o.backend.list({ ...q.data, tenant: id.tenant, limit: q.data.limit ?? 100 });
    return c.json({ runs: runs.map(summary) });
  });

  api.get('/runs/:id', async (c) => {
    need(c, 'read');
    const run = await ownRun(c, o);
    const state = await o.backend.state(run.runId);
    const result = run.open ? undefined : await o.backend.result(run.runId);
    return c.json({ run: summary(run), state: state ?? null, result: result ?? null });
  });

  api.post('/runs/:id/cancel', async (c) => {
    const id = need(c, 'cancel');
    const run = await ownRun(c, o);
    const req = await body(c, Cancel);
    const ended = () => new HttpError(409, 'already_ended', `run ${run.runId} already ended (${run.status.toLowerCase()}): nothing to cancel`);
    if (!run.open) throw ended();
    if (!(await o.backend.cancel(run.runId, id.user, req.reason))) throw ended();
    return c.json({ runId: run.runId, cancelling: true, by: id.user }, 202);
  });

  api.get('/runs/:id/patch', async (c) => {
    need(c, 'read');
    const run = await ownRun(c, o);
    const st = await o.backend.state(run.runId);
    const repo = repoOf(run);
    if (!repo) throw notFound(`patch for run ${run.runId} yet`);
    const text = await currentPatch(repo, run.runId, st?.worktree, st?.baseCommit);
    return c.body(text, 200, { 'Content-Type': 'text/x-diff; charset=utf-8' });
  });
}
