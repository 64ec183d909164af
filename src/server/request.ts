/**
 * What every route of `kiln serve` reads from a request: who asks and whether they may, the run
 * it names, its JSON body. A run of another tenant is a 404 like a run that does not exist, so
 * ids do not leak.
 */
import type { Context, Hono } from 'hono';
import type { z } from 'zod';
import type { AppOptions } from './app.js';
import type { RunInfo } from './backend.js';
import { badInput, HttpError, notFound } from './http-errors.js';
import { PathIds } from './schemas.js';
import type { TenantConfig } from './tenants.js';
import { can, type Identity, type Permission } from './tokens.js';

export type Env = { Variables: { id: Identity } };
export type Api = Hono<Env>;
/** The app's options with the clock settled: what each group of routes is given. */
export type RouteOptions = AppOptions & { now: () => Date };

export function tenantOf(o: AppOptions, id: Identity): TenantConfig | undefined {
  return o.tenants().get(id.tenant);
}

/** The caller, if their role may do `p`; a 403 otherwise. */
export function need(c: Context<Env>, p: Permission): Identity {
  const id = c.get('id');
  if (!can(id, p)) throw new HttpError(403, 'forbidden', `role ${id.role} may not ${p} (user ${id.user})`);
  return id;
}

function runIdParam(c: Context<Env>): string {
  const r = PathIds.runId.safeParse(c.req.param('id'));
  if (!r.success) throw notFound(`run ${c.req.param('id')}`);
  return r.data;
}

/** The run if it is the caller's tenant's; otherwise exactly what a missing run looks like. */
export async function ownRun(c: Context<Env>, o: AppOptions): Promise<RunInfo> {
  const runId = runIdParam(c);
  const run = await o.backend.describe(runId);
  if (!run || run.tenant !== c.get('id').tenant) throw notFound(`run ${runId}`);
  return run;
}

export async function body<T extends z.ZodType>(c: Context<Env>, schema: T): Promise<z.infer<T>> {
  let raw: unknown = {};
  const text = await c.req.text();
  if (text.trim()) {
    try {
      raw = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'bad_request', 'the request body is not JSON');
    }
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw badInput(r.error, 'body');
  return r.data;
}

/** the repo the server signed at the run's start: never the run's own word (its state, input or search attributes) */
export const repoOf = (run: RunInfo) => run.repo;

export function summary(r: RunInfo) {
  return { runId: r.runId, status: r.status, phase: r.phase, repo: r.repo, startedAt: r.startedAt, closedAt: r.closedAt, startedBy: r.memo.startedBy };
}
