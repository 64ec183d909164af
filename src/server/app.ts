/**
 * `kiln serve`'s HTTP API: bearer tokens, tenants, limits, and the routes over the run store.
 * A run of another tenant is a 404 like a run that does not exist, so ids do not leak.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { signApproval, signRunStart } from '../auth/attestation.js';
import { buildRunInput, newRunId } from '../client/run-options.js';
import { DEFAULT_MODEL, isScriptedSpec } from '../model/models.js';
import { currentPatch } from '../client/patch.js';
import { KilnInputError, UsageError } from '../shared/errors.js';
import { ScriptError } from '../model/script.js';
import { artifactsDir } from '../shared/paths.js';
import type { ApprovalDecision, RunState } from '../shared/types.js';
import type { RunBackend, RunInfo } from './backend.js';
import { badInput, fromUsage, HttpError, notFound, send } from './http-errors.js';
import { bodyHash, conflict, runIdForKey } from './idempotency.js';
import { inboxAsset, INBOX_CSP } from './inbox.js';
import { checkStart, LimitError, RateLimiter, utcMidnight } from './limits.js';
import { openApiDocument } from './openapi.js';
import { Cancel, CreateRun, Decide, Human, ListRuns, PathIds } from './schemas.js';
import { runEvents, tenantEvents } from './sse.js';
import { DEFAULT_TENANT, repoAllowed, type TenantConfig } from './tenants.js';
import { can, type Identity, type Permission, type TokenStore } from './tokens.js';

export const MAX_BODY_BYTES = 64 * 1024;

/** Which request field an input error from the run checks is about. */
const INPUT_FIELD: Record<string, string> = { ScriptError: 'model', KilnConfigError: 'repo', PolicyConfigError: 'repo', RunRequestRefused: 'repo' };

export interface AppOptions {
  backend: RunBackend;
  tokens: TokenStore;
  tenants: () => Map<string, TenantConfig>;
  approvalKey: Buffer;
  now?: () => Date;
  /** how often the event stream asks the run for news */
  pollMs?: number;
  /**
   * `kiln serve --allow-scripted-model`: a scripted model names a file the server and the worker
   * read, so a tenant who may name one may probe any file they can read; off unless the operator
   * turns it on, for development
   */
  allowScriptedModels?: boolean;
}

type Env = { Variables: { id: Identity } };

export function createApp(o: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  const now = o.now ?? (() => new Date());
  const limiter = new RateLimiter(() => now().getTime());
  const tenantOf = (id: Identity) => o.tenants().get(id.tenant);
  /** closed runs' costs never change: asked once */
  const costs = new Map<string, number>();
  /** runs started here that the list may not show yet (visibility lags a start by a moment) */
  const recent = new Map<string, { tenant: string; maxUsd: number; at: number }>();
  let startQueue: Promise<unknown> = Promise.resolve();

  app.onError((err, c) => {
    if (err instanceof HttpError) return send(c, err);
    if (err instanceof LimitError) {
      c.header('Retry-After', String(err.retryAfterS));
      return send(
        c,
        new HttpError(429, err.limit === 'rate' ? 'rate_limited' : 'limit_reached', err.message, undefined, {
          limit: err.limit,
          retryAfterSeconds: err.retryAfterS,
          ...(err.resetsAt ? { resetsAt: err.resetsAt } : {}),
        }),
      );
    }
    if (err instanceof UsageError) return send(c, fromUsage(err));
    // a script, a repo's config or policy that cannot be used: the caller's input, said as it is
    if (err instanceof KilnInputError) return send(c, new HttpError(400, 'bad_request', err.message, INPUT_FIELD[err.name]));
    // never a stack trace to the caller; the operator sees it in the server's output
    console.error(`kiln serve: ${c.req.method} ${c.req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return send(c, new HttpError(500, 'internal', 'the server failed on this request; its log says why'));
  });
  app.notFound((c) => send(c, new HttpError(404, 'not_found', `no route ${c.req.method} ${c.req.path}: see GET /openapi.json`)));

  app.use('*', secureHeaders({ contentSecurityPolicy: INBOX_CSP, referrerPolicy: 'no-referrer' }));
  app.use('*', bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => send(c, new HttpError(413, 'too_large', `request body over ${MAX_BODY_BYTES} bytes`)) }));

  app.get('/openapi.json', (c) => c.json(openApiDocument()));
  app.get('/', (c) => inboxAsset(c, 'inbox.html'));
  app.get('/inbox.js', (c) => inboxAsset(c, 'inbox.js'));
  app.get('/inbox.css', (c) => inboxAsset(c, 'inbox.css'));
  // browsers ask for it unprompted: an empty answer, not a 404 in their console
  app.get('/favicon.ico', (c) => c.body(null, 204));

  const api = new Hono<Env>();
  const authenticate = async (c: Context<Env>, next: () => Promise<void>) => {
    // "/runs" matches both "/runs" and "/runs/*": one request, one check, one token from the bucket
    if (c.get('id')) return next();
    const m = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
    const id = m ? o.tokens.verify(m[1]!) : undefined;
    if (!id) {
      c.header('WWW-Authenticate', 'Bearer realm="kiln"');
      throw new HttpError(
        401,
        'unauthorized',
        m ? 'this token is not valid (revoked or unknown)' : 'send Authorization: Bearer TOKEN (`kiln token create` makes one)',
      );
    }
    limiter.take(id.tokenId, (tenantOf(id) ?? DEFAULT_TENANT).requestsPerMinute);
    c.set('id', id);
    await next();
  };
  for (const path of ['/me', '/runs', '/runs/*', '/approvals', '/events']) api.use(path, authenticate);

  api.get('/me', (c) => {
    const id = c.get('id');
    return c.json({ user: id.user, tenant: id.tenant, role: id.role });
  });

  const need = (c: Context<Env>, p: Permission) => {
    const id = c.get('id');
    if (!can(id, p)) throw new HttpError(403, 'forbidden', `role ${id.role} may not ${p} (user ${id.user})`);
    return id;
  };
  const runIdParam = (c: Context<Env>) => {
    const r = PathIds.runId.safeParse(c.req.param('id'));
    if (!r.success) throw notFound(`run ${c.req.param('id')}`);
    return r.data;
  };
  /** The run if it is the caller's tenant's; otherwise exactly what a missing run looks like. */
  const ownRun = async (c: Context<Env>): Promise<RunInfo> => {
    const runId = runIdParam(c);
    const run = await o.backend.describe(runId);
    if (!run || run.tenant !== c.get('id').tenant) throw notFound(`run ${runId}`);
    return run;
  };
  const body = async <T extends z.ZodType>(c: Context<Env>, schema: T): Promise<z.infer<T>> => {
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
  };
  /** the repo the server signed at the run's start: never the run's own word (its state, input or search attributes) */
  const repoOf = (run: RunInfo) => run.repo;

  api.post('/runs', async (c) => {
    const id = need(c, 'start');
    const req = await body(c, CreateRun);
    const tenant = tenantOf(id);
    if (!repoAllowed(tenant, req.repo)) {
      throw new HttpError(
        403,
        'repo_not_allowed',
        `tenant ${id.tenant} may not start runs on ${req.repo}: an operator adds it to the tenant's repos in tenants.json`,
        'repo',
      );
    }
    if (req.model !== undefined && isScriptedSpec(req.model.trim()) && !o.allowScriptedModels) {
      throw new HttpError(
        403,
        'model_not_allowed',
        'scripted models are a development tool, and this server does not accept them: its operator enables them with `kiln serve --allow-scripted-model`',
        'model',
      );
    }
    if (tenant?.models && !tenant.models.includes(req.model ?? DEFAULT_MODEL)) {
      throw new HttpError(403, 'model_not_allowed', `tenant ${id.tenant} may use the models ${tenant.models.join(', ')}`, 'model');
    }
    const key = c.req.header('idempotency-key');
    const hash = bodyHash(req);
    const runId = key !== undefined ? runIdForKey(id.tenant, key) : newRunId();
    const replay = async (run: RunInfo) => {
      if (run.tenant !== id.tenant || run.memo.bodyHash !== hash) throw conflict(key!);
      return c.json({ runId: run.runId, created: false, status: run.status }, 200);
    };
    if (key !== undefined) {
      const existing = await o.backend.describe(runId);
      if (existing) return replay(existing);
    }
    const input = await buildRunInput({
      repo: req.repo,
      goal: req.goal,
      model: req.model,
      check: req.checks,
      setup: req.setup,
      base: req.base,
      approvalMode: req.approvalMode,
      sandbox: req.sandbox,
      allowTestEdits: req.allowTestEdits,
      unverified: req.unverified,
      maxUsd: req.maxUsd?.toString(),
      maxTurns: req.maxTurns?.toString(),
      maxWall: req.maxWall,
      approvalTimeout: req.approvalTimeout,
      id: runId,
    }).catch((err: unknown) => {
      // what a script file holds, and whether a path exists, are the server host's business
      if (!(err instanceof ScriptError)) throw err;
      console.error(`kiln serve: POST /runs: ${err.message}`);
      throw new HttpError(400, 'bad_request', 'the scripted model cannot be used; the server log says why', 'model');
    });
    // the git top level may differ from the path given: it must be allowed too
    if (!repoAllowed(tenant, input.repo)) throw new HttpError(403, 'repo_not_allowed', `tenant ${id.tenant} may not start runs on ${input.repo}`, 'repo');
    // one start at a time, so two requests cannot both fit under a limit only one of them fits
    const started: Promise<{ runId: string; attached: boolean }> = startQueue
      .catch(() => undefined)
      .then(async () => {
        const t = now();
        const [open, today] = await Promise.all([
          o.backend.list({ tenant: id.tenant, open: true, limit: 1000 }),
          o.backend.list({ tenant: id.tenant, startedSince: utcMidnight(t), limit: 1000 }),
        ]);
        for (const [rid, r] of recent) if (t.getTime() - r.at > 60_000) recent.delete(rid);
        const listed = new Set(today.map((r) => r.runId));
        const unlisted = [...recent].filter(([rid, r]) => r.tenant === id.tenant && !listed.has(rid));
        const dayRuns = await Promise.all(
          today.map(async (r) => {
            if (r.open) return { open: true, maxUsd: r.memo.maxUsd ?? 0 };
            if (!costs.has(r.runId)) costs.set(r.runId, (await o.backend.result(r.runId))?.costUsd ?? 0);
            return { open: false, maxUsd: 0, costUsd: costs.get(r.runId) };
          }),
        );
        checkStart(tenant!, {
          tenant: id.tenant,
          openRuns: open.length + unlisted.filter(([rid]) => !open.some((r) => r.runId === rid)).length,
          today: [...dayRuns, ...unlisted.map(([, r]) => ({ open: true, maxUsd: r.maxUsd }))],
          newMaxUsd: input.budgets.maxUsd,
          now: t,
        });
        input.searchAttributes = await o.backend.searchAttributes();
        const claim = { runId: input.runId, repo: input.repo, user: id.user, tenant: id.tenant, issuedAt: t.toISOString() };
        // the input names who asked; what vouches for it is the start signed below, once Temporal has named the execution
        const { sig } = signRunStart(o.approvalKey, { ...claim, execution: '' });
        input.requestedBy = { user: id.user, tenant: id.tenant, issuedAt: claim.issuedAt, sig };
        const s = await o.backend.start(input, id.tenant, { startedBy: id.user, bodyHash: hash, maxUsd: input.budgets.maxUsd });
        if (!s.attached) {
          if (s.execution) await o.backend.attestStart(s.runId, s.execution, signRunStart(o.approvalKey, { ...claim, execution: s.execution }));
          recent.set(s.runId, { tenant: id.tenant, maxUsd: input.budgets.maxUsd, at: t.getTime() });
        }
        return s;
      });
    startQueue = started;
    const s = await started;
    if (s.attached) {
      // a racing request with the same key started it first
      const run = await o.backend.describe(s.runId);
      if (run) return replay(run);
    }
    return c.json({ runId: s.runId, created: true, startedBy: id.user, scripted: input.model.startsWith('scripted:') }, 201);
  });

  api.get('/runs', async (c) => {
    const id = need(c, 'read');
    const q = ListRuns.safeParse(c.req.query());
    if (!q.success) throw badInput(q.error, 'query');
    const runs = await o.backend.list({ ...q.data, tenant: id.tenant, limit: q.data.limit ?? 100 });
    return c.json({ runs: runs.map(summary) });
  });

  api.get('/runs/:id', async (c) => {
    need(c, 'read');
    const run = await ownRun(c);
    const state = await o.backend.state(run.runId);
    const result = run.open ? undefined : await o.backend.result(run.runId);
    return c.json({ run: summary(run), state: state ?? null, result: result ?? null });
  });

  api.post('/runs/:id/cancel', async (c) => {
    const id = need(c, 'cancel');
    const run = await ownRun(c);
    const req = await body(c, Cancel);
    const ended = () => new HttpError(409, 'already_ended', `run ${run.runId} already ended (${run.status.toLowerCase()}): nothing to cancel`);
    if (!run.open) throw ended();
    if (!(await o.backend.cancel(run.runId, id.user, req.reason))) throw ended();
    return c.json({ runId: run.runId, cancelling: true, by: id.user }, 202);
  });

  api.get('/runs/:id/events', async (c) => {
    need(c, 'read');
    const run = await ownRun(c);
    const last = Number(c.req.header('last-event-id') ?? c.req.query('lastEventId') ?? 0);
    return runEvents(c, o.backend, run, Number.isFinite(last) && last > 0 ? last : 0, o.pollMs ?? 500);
  });

  api.get('/events', (c) => {
    const id = need(c, 'read');
    return tenantEvents(c, o.backend, { tenant: id.tenant, open: true, limit: 100 }, o.pollMs ?? 500);
  });

  api.get('/runs/:id/patch', async (c) => {
    need(c, 'read');
    const run = await ownRun(c);
    const st = await o.backend.state(run.runId);
    const repo = repoOf(run);
    if (!repo) throw notFound(`patch for run ${run.runId} yet`);
    const text = await currentPatch(repo, run.runId, st?.worktree, st?.baseCommit);
    return c.body(text, 200, { 'Content-Type': 'text/x-diff; charset=utf-8' });
  });

  const artifactNames = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isFile()) : []);

  api.get('/runs/:id/artifacts', async (c) => {
    need(c, 'read');
    const run = await ownRun(c);
    const repo = repoOf(run);
    const names = repo ? artifactNames(artifactsDir(repo, run.runId)) : [];
    return c.json({ runId: run.runId, artifacts: names.map((n) => ({ name: n, href: `/runs/${run.runId}/artifacts/${encodeURIComponent(n)}` })) });
  });

  api.get('/runs/:id/artifacts/:name', async (c) => {
    need(c, 'read');
    const run = await ownRun(c);
    const repo = repoOf(run);
    const name = c.req.param('name');
    // only a name the listing shows: no path, so nothing outside the run's directory
    if (!repo || !artifactNames(artifactsDir(repo, run.runId)).includes(name)) throw notFound(`artifact ${name} in run ${run.runId}`);
    const type = name.endsWith('.json') ? 'application/json' : name.endsWith('.jsonl') ? 'application/x-ndjson' : 'text/plain; charset=utf-8';
    return c.body(await readFile(join(artifactsDir(repo, run.runId), name)), 200, { 'Content-Type': type, 'X-Content-Type-Options': 'nosniff' });
  });

  api.get('/approvals', async (c) => {
    const id = need(c, 'read');
    const open = await o.backend.list({ tenant: id.tenant, open: true, limit: 100 });
    const states = await Promise.all(open.map(async (r) => ({ run: r, st: await o.backend.state(r.runId) })));
    const context = (run: RunInfo, st: RunState) => ({
      runId: run.runId,
      repo: st.repo,
      goal: st.goal,
      model: st.model,
      scripted: st.scripted,
      phase: st.phase,
      plan: st.plan,
      recentLog: st.log.slice(-12),
      startedBy: run.memo.startedBy,
    });
    const approvals = states.flatMap(({ run, st }) => (st ? st.pendingApprovals.map((a) => ({ ...context(run, st), approval: a })) : []));
    // runs that wait for a person's hint, accept or abandon (POST /runs/{id}/human)
    const needsHuman = states.flatMap(({ run, st }) => (st?.phase === 'needs_human' ? [{ ...context(run, st), reason: st.reason ?? '' }] : []));
    return c.json({ approvals, needsHuman });
  });

  api.post('/runs/:id/approvals/:approvalId', async (c) => {
    const id = need(c, 'approve');
    const run = await ownRun(c);
    const approvalId = c.req.param('approvalId');
    const req = await body(c, Decide);
    if (req.decision === 'reject' && !req.reason) throw new HttpError(400, 'bad_request', 'a rejection needs a reason: it goes back to the model', 'reason');
    const st = await o.backend.state(run.runId);
    const pending = st?.pendingApprovals.find((a) => a.id === approvalId);
    if (st && !pending) throw notFound(`pending approval ${approvalId} in run ${run.runId}`);
    // a call that needs several approvers needs them every time: the run takes no grant from it
    if (req.scope === 'run' && pending?.approvals)
      throw new HttpError(
        400,
        'bad_request',
        `${approvalId} needs ${pending.approvals.needed} approvers each time it runs, so it cannot be approved for the rest of the run: approve it once`,
        'scope',
      );
    // the signature names the execution and exactly the call the approver was shown: read both from the run, or send nothing
    if (!st || !pending || !run.execution)
      throw new HttpError(409, 'not_applied', `run ${run.runId} does not answer (no worker?): its pending approval cannot be read to sign it; try again`);
    const approve = req.decision === 'approve';
    const scope = req.scope ?? 'once';
    const attestation = signApproval(o.approvalKey, {
      execution: run.execution,
      runId: run.runId,
      approvalId,
      call: pending.hash ?? '',
      approve,
      scope,
      user: id.user,
      tenant: id.tenant,
      issuedAt: now().toISOString(),
    });
    const d: ApprovalDecision = { approvalId, approve, scope, by: id.user, ...(req.reason ? { reason: req.reason } : {}), attestation };
    const result = await applied(() => o.backend.approve(run.runId, d));
    return c.json({ runId: run.runId, approvalId, decision: req.decision, scope, by: id.user, result });
  });

  api.post('/runs/:id/human', async (c) => {
    const id = need(c, 'approve');
    const run = await ownRun(c);
    const req = await body(c, Human);
    const result = await applied(() => o.backend.human(run.runId, { action: req.action, ...(req.text ? { text: req.text } : {}), by: id.user }));
    return c.json({ runId: run.runId, action: req.action, by: id.user, result });
  });

  app.route('/', api);
  return app;
}

/** The run refused the decision (not pending any more, not waiting for a person): a conflict, not bad input. */
async function applied(send_: () => Promise<string>): Promise<string> {
  try {
    return await send_();
  } catch (err) {
    if (err instanceof UsageError) throw new HttpError(409, 'not_applied', err.message);
    throw err;
  }
}

function summary(r: RunInfo) {
  return { runId: r.runId, status: r.status, phase: r.phase, repo: r.repo, startedAt: r.startedAt, closedAt: r.closedAt, startedBy: r.memo.startedBy };
}
