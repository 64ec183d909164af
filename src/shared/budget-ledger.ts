/**
 * The budget ledger of one tenant: limits per tenant, per repo, per day and per parallel run
 * (the parent of a fan-out), the spend settled against each, and the reservations open for the
 * model calls in flight. Pure: the ledger workflow (src/workflows/budget-ledger.ts) holds one of
 * these and applies the calls' reserve / settle / release to it one at a time, so two calls racing
 * for the last dollar are decided in the order the server delivered them; the activities and the
 * CLI import the types.
 *
 * A call reserves its worst case (its input tokens as estimated plus its output limit) before it
 * is sent; it is not sent when that does not fit every limit of its scopes. Its reply settles the
 * reservation with what the API billed (each message once); a call that failed unbilled releases
 * it; a run's end releases what its dead workers left open.
 */
import type { Usage } from './types.js';

/** A limit of one scope; unset fields are unlimited. */
export interface Limit {
  tokens?: number;
  usd?: number;
}

/** What a scope has been billed. */
export interface Spend extends Usage {
  usd: number;
}

/** The limits an operator sets (`kiln budget set`); a parent's cap comes with its children's calls. */
export interface BudgetLimits {
  tenant?: Limit;
  /** every UTC day's own */
  day?: Limit;
  repos: Record<string, Limit>;
  /** a parallel run's: its children's calls together (set by the first, raised by a person) */
  parents: Record<string, Limit>;
}

/** A call's worst case, asked of the ledger before the call is sent. */
export interface ReserveRequest {
  /** the call's idempotency key: the same call asked again (a retried activity) holds one reservation */
  key: string;
  runId: string;
  repo: string;
  /** the parallel run this run is an attempt of, and that run's own budget over all its attempts */
  parent?: { runId: string; cap: Limit };
  tokens: number;
  usd: number;
}

/** Which limit a call does not fit, and by how much. */
export interface OverBudget {
  /** `tenant`, `repo:PATH`, `day:YYYY-MM-DD` or `parent:RUN` */
  scope: string;
  limit: 'tokens' | 'usd';
  max: number;
  /** billed so far, and held by the other calls in flight */
  used: number;
  held: number;
  /** what this call reserves */
  need: number;
}

export type ReserveAnswer = { ok: true } | { ok: false; over: OverBudget };

/**
 * A grant to a lease: one hold (its key) that an activity's calls spend their worst cases from
 * locally, so that a call whose worst case fits what the lease holds is sent without a trip to
 * the ledger. Grants are numbered: the same grant asked again adds nothing.
 */
export interface LeaseRequest {
  /** the lease's key; its hold is one reservation of the run */
  key: string;
  runId: string;
  repo: string;
  parent?: { runId: string; cap: Limit };
  /** this ask's number, rising with each the lease makes (a refused one leaves a gap): the same number again adds nothing */
  grant: number;
  tokens: number;
  usd: number;
  /**
   * Room that must be left in every limited scope after the grant: a lease asks ahead of need only
   * far from a limit, so that near one every call is decided on its own, as a reservation is.
   */
  spare?: { tokens: number; usd: number };
  /** the activity's billed replies not yet told, settled before the grant is weighed */
  settles?: SettleRequest[];
}

/** A reply the API billed, settling its call's reservation. */
export interface SettleRequest {
  key: string;
  runId: string;
  repo: string;
  parent?: { runId: string; cap: Limit };
  /** the API's message id: a reply is counted once whoever tells it */
  message: string;
  usage: Usage;
  usd: number;
  /** a call that spent its worst case from a lease: that much of the lease's hold goes, not the whole of it */
  lease?: { key: string; frees: { tokens: number; usd: number } };
}

export interface Reservation {
  runId: string;
  scopes: string[];
  tokens: number;
  usd: number;
  /** a lease's: the grants it has been given so far */
  grants?: number;
}

export interface LedgerState {
  tenant: string;
  limits: BudgetLimits;
  /** settled spend per scope */
  used: Record<string, Spend>;
  /** reservations of the calls in flight, by idempotency key */
  open: Record<string, Reservation>;
  /** message ids already counted, the newest last (bounded) */
  billed: string[];
  /** replies that cost more than their call reserved (the input estimate fell short) */
  overruns: number;
}

/** A limit change: `null` removes the limit. */
export interface LimitChange {
  scope: 'tenant' | 'day' | 'repo' | 'parent';
  /** the repo's path, or the parent run's id */
  name?: string;
  limit: Limit | null;
  by: string;
}

export interface ScopeView {
  scope: string;
  used: Spend;
  held: { tokens: number; usd: number; calls: number };
  limit?: Limit;
}

/** What `kiln budget show` and the API show. */
export interface LedgerView {
  tenant: string;
  day: string;
  scopes: ScopeView[];
  /** calls reserved and not settled yet */
  open: number;
  overruns: number;
}

/** Message ids kept to count a reply once: far more than the replies of the runs in flight. */
export const MAX_BILLED_IDS = 5000;
/** Days of spend kept; older days are dropped from the ledger. */
export const DAYS_KEPT = 31;
/** Parallel runs whose spend and cap are kept; the oldest are dropped first. */
export const PARENTS_KEPT = 500;

const zero = (): Spend => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, usd: 0 });
export const spendTokens = (s: Usage): number => s.input + s.output + s.cacheRead + s.cacheWrite;
export const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

export function emptyLedger(tenant: string): LedgerState {
  return { tenant, limits: { repos: {}, parents: {} }, used: {}, open: {}, billed: [], overruns: 0 };
}

/** The scopes a call counts against, its day being the ledger's when it reserves. */
export function scopesOf(req: Pick<ReserveRequest, 'repo' | 'parent'>, day: string): string[] {
  return ['tenant', `repo:${req.repo}`, `day:${day}`, ...(req.parent ? [`parent:${req.parent.runId}`] : [])];
}

export function limitOf(state: LedgerState, scope: string): Limit | undefined {
  if (scope === 'tenant') return state.limits.tenant;
  if (scope.startsWith('day:')) return state.limits.day;
  if (scope.startsWith('repo:')) return state.limits.repos[scope.slice(5)];
  if (scope.startsWith('parent:')) return state.limits.parents[scope.slice(7)];
  return undefined;
}

function heldIn(state: LedgerState, scope: string): { tokens: number; usd: number; calls: number } {
  const h = { tokens: 0, usd: 0, calls: 0 };
  for (const r of Object.values(state.open))
    if (r.scopes.includes(scope)) {
      h.tokens += r.tokens;
      h.usd += r.usd;
      h.calls += 1;
    }
  return h;
}

/** The first limit the request would cross, or undefined when it fits them all. */
export function overBudget(state: LedgerState, scopes: readonly string[], need: { tokens: number; usd: number }): OverBudget | undefined {
  for (const scope of scopes) {
    const limit = limitOf(state, scope);
    if (!limit) continue;
    const used = state.used[scope] ?? zero();
    const held = heldIn(state, scope);
    if (limit.tokens !== undefined && spendTokens(used) + held.tokens + need.tokens > limit.tokens)
      return { scope, limit: 'tokens', max: limit.tokens, used: spendTokens(used), held: held.tokens, need: need.tokens };
    if (limit.usd !== undefined && used.usd + held.usd + need.usd > limit.usd)
      return { scope, limit: 'usd', max: limit.usd, used: round6(used.usd), held: round6(held.usd), need: round6(need.usd) };
  }
  return undefined;
}

/** Holds the call's worst case when it fits every limit of its scopes; the same key again holds nothing more. */
export function reserve(state: LedgerState, req: ReserveRequest, day: string): ReserveAnswer {
  if (state.open[req.key]) return { ok: true };
  if (req.parent && !state.limits.parents[req.parent.runId]) keepParent(state, req.parent.runId, req.parent.cap);
  const scopes = scopesOf(req, day);
  const over = overBudget(state, scopes, req);
  if (over) return { ok: false, over };
  state.open[req.key] = { runId: req.runId, scopes, tokens: req.tokens, usd: req.usd };
  return { ok: true };
}

/**
 * Adds a grant to a lease when it fits every limit of its scopes with its spare room left; a grant
 * asked again (a retried update) adds nothing. A refusal names the limit as a reservation's would.
 */
export function lease(state: LedgerState, req: LeaseRequest, day: string): ReserveAnswer {
  for (const s of req.settles ?? []) settle(state, s, day);
  const held = state.open[req.key];
  if (held && (held.grants ?? 0) >= req.grant) return { ok: true };
  if (req.parent && !state.limits.parents[req.parent.runId]) keepParent(state, req.parent.runId, req.parent.cap);
  const scopes = held?.scopes ?? scopesOf(req, day);
  const spare = req.spare ?? { tokens: 0, usd: 0 };
  const over = overBudget(state, scopes, { tokens: req.tokens + spare.tokens, usd: req.usd + spare.usd });
  if (over) return { ok: false, over };
  const r = (state.open[req.key] ??= { runId: req.runId, scopes, tokens: 0, usd: 0 });
  r.tokens += req.tokens;
  r.usd = round6(r.usd + req.usd);
  r.grants = req.grant;
  return { ok: true };
}

/** Counts a billed reply against its call's scopes (a message once) and lets its reservation go. */
export function settle(state: LedgerState, s: SettleRequest, day: string): { counted: boolean } {
  const leased = s.lease ? state.open[s.lease.key] : undefined;
  const held = leased ?? state.open[s.key];
  if (!leased) delete state.open[s.key];
  if (state.billed.includes(s.message)) return { counted: false };
  state.billed.push(s.message);
  if (state.billed.length > MAX_BILLED_IDS) state.billed.splice(0, state.billed.length - MAX_BILLED_IDS);
  if (leased) {
    // the call's worst case leaves the lease's hold once, with its message; a reply that cost more
    // took the rest from the lease too (the activity's own count of it does the same), so a lease
    // never lets out a call whose room an overrun has spent
    const f = s.lease!.frees;
    leased.tokens = Math.max(0, leased.tokens - Math.max(f.tokens, spendTokens(s.usage)));
    leased.usd = Math.max(0, round6(leased.usd - Math.max(f.usd, s.usd)));
  }
  const scopes = held?.scopes ?? scopesOf(s, day);
  for (const scope of scopes) {
    const u = (state.used[scope] ??= zero());
    u.input += s.usage.input;
    u.output += s.usage.output;
    u.cacheRead += s.usage.cacheRead;
    u.cacheWrite += s.usage.cacheWrite;
    u.usd = round6(u.usd + s.usd);
  }
  const reserved = s.lease && leased ? s.lease.frees : held;
  if (reserved && (spendTokens(s.usage) > reserved.tokens || s.usd > reserved.usd + 1e-9)) state.overruns += 1;
  forgetOldDays(state, day);
  return { counted: true };
}

/** A call that ended unbilled: its reservation goes. */
export function release(state: LedgerState, key: string): void {
  delete state.open[key];
}

/** A run that ended: the reservations its killed calls left are let go (their replies, if any, were settled). */
export function releaseRun(state: LedgerState, runId: string): number {
  let n = 0;
  for (const [key, r] of Object.entries(state.open))
    if (r.runId === runId) {
      delete state.open[key];
      n += 1;
    }
  return n;
}

/** Why a limit change is refused, or undefined. */
export function limitChangeProblem(c: LimitChange): string | undefined {
  if (!c || !['tenant', 'day', 'repo', 'parent'].includes(c.scope)) return 'scope must be tenant, day, repo or parent';
  if ((c.scope === 'repo' || c.scope === 'parent') && (typeof c.name !== 'string' || !c.name)) return `a ${c.scope} limit names its ${c.scope}`;
  if (typeof c.by !== 'string' || !c.by) return 'by must name who changes the limit';
  if (c.limit === null) return undefined;
  if (typeof c.limit !== 'object') return 'limit must be {tokens?, usd?} or null';
  for (const k of ['tokens', 'usd'] as const) {
    const v = c.limit[k];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) return `limit.${k} must be a number ≥ 0`;
  }
  if (c.limit.tokens === undefined && c.limit.usd === undefined) return 'limit needs tokens or usd (null removes it)';
  return undefined;
}

export function setLimit(state: LedgerState, c: LimitChange): void {
  const limit = c.limit
    ? { ...(c.limit.tokens !== undefined ? { tokens: c.limit.tokens } : {}), ...(c.limit.usd !== undefined ? { usd: c.limit.usd } : {}) }
    : undefined;
  if (c.scope === 'tenant' || c.scope === 'day') {
    if (limit) state.limits[c.scope] = limit;
    else delete state.limits[c.scope];
  } else if (c.scope === 'repo') {
    if (limit) state.limits.repos[c.name!] = limit;
    else delete state.limits.repos[c.name!];
  } else if (limit) keepParent(state, c.name!, limit);
  else delete state.limits.parents[c.name!];
}

function keepParent(state: LedgerState, runId: string, cap: Limit): void {
  delete state.limits.parents[runId];
  state.limits.parents[runId] = cap;
  const ids = Object.keys(state.limits.parents);
  for (const old of ids.slice(0, Math.max(0, ids.length - PARENTS_KEPT))) {
    delete state.limits.parents[old];
    delete state.used[`parent:${old}`];
  }
}

function forgetOldDays(state: LedgerState, today: string): void {
  const days = Object.keys(state.used)
    .filter((s) => s.startsWith('day:'))
    .sort();
  for (const d of days) if (d.slice(4) < today && days.length - days.indexOf(d) > DAYS_KEPT) delete state.used[d];
}

/** The ledger as shown: every scope with a spend, a limit or a reservation. */
export function ledgerView(state: LedgerState, day: string): LedgerView {
  const names = new Set<string>(['tenant', `day:${day}`, ...Object.keys(state.used)]);
  for (const r of Object.keys(state.limits.repos)) names.add(`repo:${r}`);
  for (const p of Object.keys(state.limits.parents)) names.add(`parent:${p}`);
  for (const r of Object.values(state.open)) for (const s of r.scopes) names.add(s);
  const scopes = [...names].map((scope) => {
    const limit = limitOf(state, scope);
    const held = heldIn(state, scope);
    return { scope, used: { ...(state.used[scope] ?? zero()) }, held: { ...held, usd: round6(held.usd) }, ...(limit ? { limit } : {}) };
  });
  return { tenant: state.tenant, day, scopes, open: Object.keys(state.open).length, overruns: state.overruns };
}

/** One line for a person: which limit, by how much, and what to do. */
export function describeOver(o: OverBudget, tenant: string): string {
  const unit = o.limit === 'usd' ? (n: number) => `$${n.toFixed(4)}` : (n: number) => `${n} tokens`;
  const short = o.used + o.held + o.need - o.max;
  const how = o.scope.startsWith('parent:')
    ? `--parent ${o.scope.slice(7)}`
    : o.scope.startsWith('repo:')
      ? `--repo ${o.scope.slice(5)}`
      : o.scope === 'tenant'
        ? '--tenant-wide'
        : '--day';
  return (
    `the next model call needs ${unit(o.need)} of budget ${o.scope} (${o.limit}: ${unit(o.max)}, ${unit(o.used)} billed, ${unit(o.held)} held by calls in flight): ` +
    `short by ${unit(o.limit === 'usd' ? round6(short) : short)}. Raise it (kiln budget set --tenant ${tenant} ${how} --${o.limit} N) and approve, or cancel the run`
  );
}

/** The ledger workflow's type, and its id for a tenant: one long-lived ledger each. */
export const LEDGER_WORKFLOW_TYPE = 'kilnBudget';
export const ledgerWorkflowId = (tenant: string): string => `kiln-budget-${tenant}`;
/** A run started without a tenant (the CLI, `kiln dev`) counts against this one. */
export const DEFAULT_TENANT = 'default';
