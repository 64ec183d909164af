/**
 * POST /runs: start a run on one of the tenant's repos, with one of its models, within its
 * limits. An Idempotency-Key names the run, so a retried request answers with the run it started.
 */
import { signRunStart } from '../../auth/attestation.js';
import { buildRunInput, newRunId } from '../../client/run-options.js';
import { isScriptedSpec } from '../../model/models.js';
import { ScriptError } from '../../model/script.js';
import type { RunInput } from '../../shared/types.js';
import type { RunInfo } from '../backend.js';
import { HttpError } from '../http-errors.js';
import { bodyHash, conflict, runIdForKey } from '../idempotency.js';
import { checkStart, utcMidnight } from '../limits.js';
import { body, need, tenantOf, type Api, type RouteOptions } from '../request.js';
import { CreateRun } from '../schemas.js';
import { repoAllowed, type TenantConfig } from '../tenants.js';
import type { Identity } from '../tokens.js';

/** What the starts of one app remember between requests. */
interface Starts {
  /** closed runs' costs never change: asked once */
  costs: Map<string, number>;
  /** runs started here that the list may not show yet (visibility lags a start by a moment) */
  recent: Map<string, { tenant: string; maxUsd: number; at: number }>;
}

export function addStartRoute(api: Api, o: RouteOptions): void {
  const starts: Starts = { costs: new Map(), recent: new Map() };
  let startQueue: Promise<unknown> = Promise.resolve();

  api.post('/runs', async (c) => {
    const id = need(c, 'start');
    const req = await body(c, CreateRun);
    const tenant = tenantOf(o, id);
    refuseOutsideTenant(o, id, tenant, req);
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
    const input = await inputFor(req, runId);
    refuseChosenModels(o, id, tenant, req, input);
    // the git top level may differ from the path given: it must be allowed too
    if (!repoAllowed(tenant, input.repo)) throw new HttpError(403, 'repo_not_allowed', `tenant ${id.tenant} may not start runs on ${input.repo}`, 'repo');
    // one start at a time, so two requests cannot both fit under a limit only one of them fits
    const started: Promise<{ runId: string; attached: boolean }> = startQueue
      .catch(() => undefined)
      .then(() => startWithinLimits(o, starts, { id, tenant, input, hash }));
    startQueue = started;
    const s = await started;
    if (s.attached) {
      // a racing request with the same key started it first
      const run = await o.backend.describe(s.runId);
      if (run) return replay(run);
    }
    return c.json({ runId: s.runId, created: true, startedBy: id.user, scripted: input.model.startsWith('scripted:') }, 201);
  });
}

/** A repo or a model the tenant may not use: a 403 that names which. */
function refuseOutsideTenant(o: RouteOptions, id: Identity, tenant: TenantConfig | undefined, req: CreateRun): void {
  if (!repoAllowed(tenant, req.repo)) {
    throw new HttpError(
      403,
      'repo_not_allowed',
      `tenant ${id.tenant} may not start runs on ${req.repo}: an operator adds it to the tenant's repos in tenants.json`,
      'repo',
    );
  }
  const named: Array<[string | undefined, string]> = [
    [req.model, 'model'],
    [req.reviewModel, 'reviewModel'],
    ...(req.attemptModels ?? []).map((m): [string, string] => [m, 'attemptModels']),
  ];
  for (const [model, field] of named) if (model !== undefined) refuseModel(o, id, tenant, model.trim(), field);
}

/**
 * A model the run would call, however it was named: one the request names, or one it leaves to
 * the repo's `.kiln/config` or the server's environment (checked once the input is built).
 */
function refuseModel(o: RouteOptions, id: Identity, tenant: TenantConfig | undefined, model: string, field: string, from = ''): void {
  if (isScriptedSpec(model) && !o.allowScriptedModels) {
    throw new HttpError(
      403,
      'model_not_allowed',
      `scripted models are a development tool, and this server does not accept them${from}: its operator enables them with \`kiln serve --allow-scripted-model\``,
      field,
    );
  }
  if (tenant?.models && !tenant.models.includes(model)) {
    throw new HttpError(
      403,
      'model_not_allowed',
      `tenant ${id.tenant} may use the models ${tenant.models.join(', ')}${from ? `, not ${model}${from}` : ''}`,
      field,
    );
  }
}

/** The models the request left to be chosen elsewhere, as the built input chose them. */
function refuseChosenModels(o: RouteOptions, id: Identity, tenant: TenantConfig | undefined, req: CreateRun, input: RunInput): void {
  const from = " (named by the repo's .kiln/config or the server's environment)";
  if (req.model === undefined) refuseModel(o, id, tenant, input.model, 'model', from);
  if (req.reviewModel === undefined && input.reviewModel !== undefined) refuseModel(o, id, tenant, input.reviewModel, 'reviewModel', from);
}

/** The request as `kiln run`'s flags, checked the same way. */
async function inputFor(req: CreateRun, runId: string): Promise<RunInput> {
  return buildRunInput({
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
    review: req.review,
    reviewModel: req.reviewModel,
    attempts: req.attempts?.toString(),
    attemptModel: req.attemptModels,
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
}

interface StartRequest {
  id: Identity;
  tenant: TenantConfig | undefined;
  input: RunInput;
  hash: string;
}

/** Checks the tenant's limits against its open runs and today's, then starts the run signed by this server. */
async function startWithinLimits(o: RouteOptions, starts: Starts, { id, tenant, input, hash }: StartRequest): Promise<{ runId: string; attached: boolean }> {
  const { costs, recent } = starts;
  const t = o.now();
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
}
