/**
 * `kiln serve`'s HTTP API: bearer tokens, tenants, limits, and the routes over the run store
 * (routes/, one file a resource). A run of another tenant is a 404 like a run that does not
 * exist, so ids do not leak.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import { KilnInputError, UsageError } from '../shared/errors.js';
import type { RunBackend } from './backend.js';
import { fromUsage, HttpError, send } from './http-errors.js';
import { INBOX_CSP } from './inbox.js';
import { LimitError, RateLimiter } from './limits.js';
import { openApiDocument } from './openapi.js';
import { tenantOf, type Env, type RouteOptions } from './request.js';
import { addApprovalRoutes } from './routes/approvals.js';
import { addArtifactRoutes } from './routes/artifacts.js';
import { addBudgetRoutes } from './routes/budget.js';
import { addEventRoutes } from './routes/events.js';
import { addInboxRoutes } from './routes/inbox.js';
import { addRunRoutes } from './routes/runs.js';
import { addStartRoute } from './routes/start-run.js';
import { DEFAULT_TENANT, type TenantConfig } from './tenants.js';
import type { TokenStore } from './tokens.js';

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

export function createApp(options: AppOptions): Hono<Env> {
  const o: RouteOptions = { ...options, now: options.now ?? (() => new Date()) };
  const app = new Hono<Env>();
  app.onError(answerError);
  app.notFound((c) => send(c, new HttpError(404, 'not_found', `no route ${c.req.method} ${c.req.path}: see GET /openapi.json`)));

  app.use('*', secureHeaders({ contentSecurityPolicy: INBOX_CSP, referrerPolicy: 'no-referrer' }));
  app.use('*', bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => send(c, new HttpError(413, 'too_large', `request body over ${MAX_BODY_BYTES} bytes`)) }));

  app.get('/openapi.json', (c) => c.json(openApiDocument()));
  addInboxRoutes(app);

  const api = new Hono<Env>();
  const authenticate = bearerAuth(o);
  for (const path of ['/me', '/runs', '/runs/*', '/approvals', '/events', '/budget']) api.use(path, authenticate);

  api.get('/me', (c) => {
    const id = c.get('id');
    return c.json({ user: id.user, tenant: id.tenant, role: id.role });
  });
  addStartRoute(api, o);
  addRunRoutes(api, o);
  addEventRoutes(api, o);
  addArtifactRoutes(api, o);
  addBudgetRoutes(api, o);
  addApprovalRoutes(api, o);

  app.route('/', api);
  return app;
}

/** Every error as the API's error body. */
function answerError(err: Error, c: Context<Env>): Response {
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
}

/** The bearer token's identity, set on the request once, and a token from its tenant's rate bucket. */
function bearerAuth(o: RouteOptions) {
  const limiter = new RateLimiter(() => o.now().getTime());
  return async (c: Context<Env>, next: () => Promise<void>) => {
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
    limiter.take(id.tokenId, (tenantOf(o, id) ?? DEFAULT_TENANT).requestsPerMinute);
    c.set('id', id);
    await next();
  };
}
