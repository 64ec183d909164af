/** The files a run left in its artifacts directory: listed by name, read by a name the listing shows. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactsDir } from '../../shared/paths.js';
import { notFound } from '../http-errors.js';
import { need, ownRun, repoOf, type Api, type RouteOptions } from '../request.js';

const artifactNames = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isFile()) : []);

export function addArtifactRoutes(api: Api, o: RouteOptions): void {
  api.get('/runs/:id/artifacts', async (c) => {
    need(c, 'read');
    const run = await ownRun(c, o);
    const repo = repoOf(run);
    const names = repo ? artifactNames(artifactsDir(repo, run.runId)) : [];
    return c.json({ runId: run.runId, artifacts: names.map((n) => ({ name: n, href: `/runs/${run.runId}/artifacts/${encodeURIComponent(n)}` })) });
  });

  api.get('/runs/:id/artifacts/:name', async (c) => {
    need(c, 'read');
    const run = await ownRun(c, o);
    const repo = repoOf(run);
    const name = c.req.param('name');
    // only a name the listing shows: no path, so nothing outside the run's directory
    if (!repo || !artifactNames(artifactsDir(repo, run.runId)).includes(name)) throw notFound(`artifact ${name} in run ${run.runId}`);
    const type = name.endsWith('.json') ? 'application/json' : name.endsWith('.jsonl') ? 'application/x-ndjson' : 'text/plain; charset=utf-8';
    return c.body(await readFile(join(artifactsDir(repo, run.runId), name)), 200, { 'Content-Type': type, 'X-Content-Type-Options': 'nosniff' });
  });
}
