/**
 * Client-side run operations shared by the commands: start (idempotent by id), follow live,
 * read state whether or not a worker is up, and send decisions.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, defaultPayloadConverter } from '@temporalio/common';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  approveSignal,
  approveUpdate,
  cancelRequestSignal,
  humanSignal,
  humanUpdate,
  preApproveSignal,
  preApproveUpdate,
  statusQuery,
} from '../shared/messages.js';
import { approvalProgress } from '../shared/approver.js';
import { DEFAULT_TASK_QUEUE, RUN_NOT_ACHIEVED, WORKFLOW_TYPE } from '../shared/constants.js';
import { PATCH_FILE, artifactsDir } from '../shared/paths.js';
import type { ApprovalDecision, CancelRequest, HumanDecision, LogLine, PendingApproval, PreApproval, RunInput, RunResult, RunState } from '../shared/types.js';
import { TERMINAL_PHASES } from '../shared/types.js';
import { KILN_SEARCH_ATTRIBUTE_KEYS, KilnTenant } from '../shared/search-attributes.js';
import type { kilnRun } from '../workflows/run.js';
import { CliError, UsageError } from '../shared/errors.js';
import { shellQuote } from '../sandbox/shell-quote.js';
import { diskWait, diskWaitLine } from './disk-wait.js';
import { runningCall } from './running-call.js';
import { waitingForBuild } from './stranded.js';
import { settings, settingsFrom } from '../settings.js';

export interface Started {
  handle: WorkflowHandle<typeof kilnRun>;
  attached: boolean;
  /** a run this call started: its first execution's Temporal run id */
  execution?: string;
}

/**
 * The run id is the workflow id and the idempotency key: a second start with the same id
 * attaches to the run that exists, however many callers race.
 */
export async function startRun(
  client: Client,
  input: RunInput,
  opts: { taskQueue?: string; tenant?: string; memo?: Record<string, unknown> } = {},
): Promise<Started> {
  const existing = client.workflow.getHandle<typeof kilnRun>(input.runId);
  const existed = await existing.describe().then(
    () => true,
    () => false,
  );
  if (existed) return { handle: existing, attached: true };
  try {
    const handle = await client.workflow.start<typeof kilnRun>(WORKFLOW_TYPE, {
      workflowId: input.runId,
      taskQueue: opts.taskQueue ?? settings().taskQueue ?? DEFAULT_TASK_QUEUE,
      args: [input],
      // racing starts with the same id: the server lets exactly one start, the others get
      // "already started" (open or closed run) and attach — so each caller can say which it did
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      // set at start, not upserted by the workflow: a run is never visible without its tenant
      ...(opts.tenant !== undefined ? { typedSearchAttributes: [{ key: KilnTenant, value: opts.tenant }] } : {}),
      ...(opts.memo ? { memo: opts.memo } : {}),
      staticSummary: `kiln: ${input.goal.slice(0, 120)}`,
      staticDetails: [
        `repo: ${input.repo}`,
        `model: ${input.model}${input.model.startsWith('scripted:') ? ' (SCRIPTED model, not a real one)' : ''}`,
        `checks: ${input.checks.join(' && ') || '(from the repo)'}`,
      ].join('\n'),
    });
    return { handle, attached: false, execution: handle.firstExecutionRunId };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      return { handle: existing, attached: true };
    }
    throw err;
  }
}

/** Whether the server knows Kiln's search attributes (`kiln dev` registers them; a cluster may not). */
export async function hasKilnSearchAttributes(client: Client): Promise<boolean> {
  try {
    const res = await client.connection.operatorService.listSearchAttributes({ namespace: client.options.namespace });
    return KILN_SEARCH_ATTRIBUTE_KEYS.every((k) => k.name in (res.customAttributes ?? {}));
  } catch {
    return false;
  }
}

/**
 * The Web UI link when it can be known: KILN_UI_URL, else the dev server's default UI port when
 * Temporal is the default local address. A remote cluster's UI is anyone's guess: no link.
 */
export function webUiUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = settingsFrom(env).uiUrl;
  if (given) return given.replace(/\/+$/, '');
  const addr = env.TEMPORAL_ADDRESS;
  const dev = readDevState(env);
  if (dev && dev.address === (addr || '127.0.0.1:7233')) return dev.uiUrl;
  if (!addr || ['127.0.0.1:7233', 'localhost:7233'].includes(addr)) return 'http://localhost:8233';
  return undefined;
}

/** What a running `kiln dev` left under KILN_HOME: its server address and Web UI. */
export interface DevState {
  address: string;
  uiUrl: string;
  pid: number;
}

export function devStateFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(settingsFrom(env).home ?? join(homedir(), '.kiln'), 'dev.json');
}

export function readDevState(env: NodeJS.ProcessEnv = process.env): DevState | undefined {
  try {
    const st = JSON.parse(readFileSync(devStateFile(env), 'utf8')) as DevState;
    process.kill(st.pid, 0); // a stale file from a killed `kiln dev` names no live process
    return st;
  } catch {
    return undefined;
  }
}

export function workflowUrl(uiUrl: string, runId: string, namespace = process.env.TEMPORAL_NAMESPACE || 'default'): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(runId)}`;
}

export function handleFor(client: Client, runId: string): WorkflowHandle<typeof kilnRun> {
  return client.workflow.getHandle<typeof kilnRun>(runId);
}

export async function ensureExists(handle: WorkflowHandle): Promise<void> {
  try {
    await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UsageError(`no run ${handle.workflowId}: see \`kiln list\``);
    throw err;
  }
}

/** The live state; a query needs a worker, so without one this says so instead of hanging. */
export async function readState(handle: WorkflowHandle<typeof kilnRun>): Promise<RunState | undefined> {
  try {
    return await withTimeout(handle.query(statusQuery), 10_000);
  } catch {
    return undefined;
  }
}

export async function isClosed(handle: WorkflowHandle): Promise<boolean> {
  const d = await handle.describe();
  return d.status.name !== 'RUNNING';
}

/** The run's outcome; a cancelled run is an outcome, not an error. */
export async function outcome(
  handle: WorkflowHandle<typeof kilnRun>,
  input?: Pick<RunInput, 'repo' | 'runId'>,
  contact: Contact = new Contact(handle.workflowId, () => undefined),
): Promise<RunResult> {
  try {
    return await contact.keep(
      () => handle.result(),
      // a short deadline: the SDK retries an unreachable server inside one call for many seconds
      () => handle.client.withDeadline(Date.now() + PROBE_DEADLINE_MS, () => handle.describe()),
    );
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure) {
      const st = await readState(handle);
      const repo = st?.repo ?? input?.repo ?? '';
      const dir = artifactsDir(repo, handle.workflowId);
      return {
        runId: handle.workflowId,
        state: 'cancelled',
        reason: 'cancelled by request',
        attempts: st?.attempt ?? 0,
        turns: st?.turn ?? 0,
        artifactsDir: dir,
        patchPath: `${dir}/${PATCH_FILE}`,
        tokens: { input: st?.budget.input ?? 0, output: st?.budget.output ?? 0, cacheRead: st?.budget.cacheRead ?? 0, cacheWrite: st?.budget.cacheWrite ?? 0 },
        costUsd: st?.budget.costUsd ?? 0,
        scripted: st?.scripted ?? false,
      };
    }
    // a blocked run fails the workflow (red in the Web UI) and carries its result
    if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === RUN_NOT_ACHIEVED && err.cause.details?.[0]) {
      return err.cause.details[0] as RunResult;
    }
    if (err instanceof WorkflowFailedError) throw new CliError(`run ${handle.workflowId} failed: ${err.cause?.message ?? err.message}`);
    throw err;
  }
}

/** Whether any worker polls the queue: an Update needs one to answer, a Signal does not. */
export async function workerPolling(client: Client, taskQueue = settings().taskQueue ?? DEFAULT_TASK_QUEUE): Promise<boolean> {
  try {
    const res = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: taskQueue },
    });
    return (res.pollers ?? []).length > 0;
  } catch {
    return false;
  }
}

/**
 * How long an Update may wait for a worker to answer. The server lists a worker as polling for a
 * while after it stopped, so "a worker polls" is no promise that one answers: past this, the
 * decision goes as a Signal, which the server records at once and the run applies when a worker
 * runs again.
 */
export const UPDATE_WAIT_MS = 10_000;

type Delivery = { how: 'update'; text: string } | { how: 'signal'; why: string };

/** An Update when a worker answers in time (the sender learns "applied" or why not), else a Signal. */
async function deliver(client: Client, handle: WorkflowHandle, update: () => Promise<string>, signal: () => Promise<void>, waitMs: number): Promise<Delivery> {
  if (!(await workerPolling(client))) {
    await signal();
    return { how: 'signal', why: 'no worker is running' };
  }
  // workers of other builds poll, but only one of the run's own could answer
  const build = await waitingForBuild(client, handle).catch(() => undefined);
  if (build) {
    await signal();
    return { how: 'signal', why: `no worker of build ${build}, which the run is pinned to, is running` };
  }
  try {
    return { how: 'update', text: await client.withDeadline(Date.now() + waitMs, update) };
  } catch (err) {
    if (!isDeadline(err)) throw new UsageError(`not applied: ${rejectionMessage(err)}`);
    // an Update admitted before the deadline may still apply: the run ignores the duplicate signal
    await signal();
    return { how: 'signal', why: `no worker answered within ${Math.round(waitMs / 1000)} s` };
  }
}

function isDeadline(err: unknown): boolean {
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
  const e = err as { code?: number; cause?: { code?: number } };
  return e?.code === 4 || e?.cause?.code === 4; // gRPC DEADLINE_EXCEEDED
}

/**
 * A Signal is in the run's history once sent, but nothing has read it: a worker of the run's
 * build applies it when it next takes the run (a new worker of another build never does).
 */
const recorded = (why: string, what: string) =>
  `${what}: recorded as a Signal (${why}); the run applies it when a worker of its build takes the run — \`kiln status\` shows when it has`;

/**
 * Asks a run to stop: who and why first (the run records them when the cancellation reaches it),
 * then the cancellation. false when the run had ended already, also when it ended after the
 * caller looked (a closed execution is "not found" to a signal).
 */
export async function requestCancel(handle: WorkflowHandle<typeof kilnRun>, request: CancelRequest): Promise<boolean> {
  try {
    await handle.signal(cancelRequestSignal, request);
    await handle.cancel();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

export async function sendApproval(client: Client, handle: WorkflowHandle<typeof kilnRun>, d: ApprovalDecision, waitMs = UPDATE_WAIT_MS): Promise<string> {
  const what = `${d.approve ? 'approval' : 'rejection'} of ${d.approvalId}`;
  const r = await deliver(
    client,
    handle,
    () => handle.executeUpdate(approveUpdate, { args: [d] }),
    () => handle.signal(approveSignal, d),
    waitMs,
  );
  return r.how === 'update' ? r.text : recorded(r.why, what);
}

/** `kiln approve RUN --pre TEXT`: the run holds it and answers the first request for exactly TEXT (every one, with scope run). */
export async function sendPreApproval(client: Client, handle: WorkflowHandle<typeof kilnRun>, p: PreApproval, waitMs = UPDATE_WAIT_MS): Promise<string> {
  const r = await deliver(
    client,
    handle,
    () => handle.executeUpdate(preApproveUpdate, { args: [p] }),
    () => handle.signal(preApproveSignal, p),
    waitMs,
  );
  return r.how === 'update' ? r.text : recorded(r.why, `pre-approval of \`${p.text}\``);
}

const HUMAN_DONE: Record<HumanDecision['action'], string> = {
  hint: 'hint sent: the run tries again with it',
  accept: 'patch accepted: the run ends succeeded (accepted by you)',
  abandon: 'run abandoned: it ends blocked',
};

export async function sendHuman(client: Client, handle: WorkflowHandle<typeof kilnRun>, d: HumanDecision, waitMs = UPDATE_WAIT_MS): Promise<string> {
  const r = await deliver(
    client,
    handle,
    () => handle.executeUpdate(humanUpdate, { args: [d] }),
    () => handle.signal(humanSignal, d),
    waitMs,
  );
  return r.how === 'update' ? HUMAN_DONE[d.action] : recorded(r.why, `your ${d.action}`);
}

function rejectionMessage(err: unknown): string {
  const e = err as { cause?: { message?: string }; message?: string };
  return e.cause?.message ?? e.message ?? String(err);
}

export interface FollowOptions {
  print: (line: string) => void;
  uiUrl?: string;
  /** called once per new pending approval (e.g. `kiln demo --yes` approves it) */
  onApproval?: (a: PendingApproval, state: RunState) => Promise<void> | void;
  pollMs?: number;
  /** shared with outcome() so a lost server is announced once */
  contact?: Contact;
  /** each new log line as data (`kiln run --json` prints it as a JSON line) */
  onLine?: (l: LogLine) => void;
}

/** A turn quiet this long is asked what it is running (one describe call, at most this often). */
const RUNNING_AFTER_MS = 1500;

/** How long one "is the server back?" call may take before the next is made. */
const PROBE_DEADLINE_MS = 2000;

/** How long a live view keeps trying to reach a server that went away before it gives up. */
export const RECONNECT_FOR_MS = 5 * 60_000;

/** The live view lost the server for good; the run itself goes on (exit 3, not 1: no verdict). */
export class LostContactError extends CliError {
  constructor(runId: string, forMs: number) {
    super(`lost contact with the Temporal server for ${Math.round(forMs / 1000)} s; the run goes on: re-attach with \`kiln wait ${runId}\``, 3);
  }
}

/**
 * Keeps a live view attached across a server restart: a call that fails for any reason other
 * than "no such run" is retried with backoff, said once when contact is lost and once when it
 * is back, up to RECONNECT_FOR_MS. A long poll (the run's result) returns only when the run
 * ends, so its caller gives a quick `probe` that tells when the server answers again.
 */
export class Contact {
  private lostAt?: number;
  constructor(
    private readonly runId: string,
    private readonly print: (line: string) => void,
    private readonly forMs = RECONNECT_FOR_MS,
  ) {}

  async keep<T>(call: () => Promise<T>, probe?: () => Promise<unknown>): Promise<T> {
    let delay = 500;
    for (;;) {
      try {
        const v = await call();
        this.regained();
        return v;
      } catch (err) {
        this.lost(err);
        // with a probe, the call is made again only once the server answers: a long poll made
        // while it is away would wait inside the SDK's retries and then for the run's end
        for (;;) {
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, probe ? 2000 : 10_000);
          if (!probe) break;
          try {
            await probe();
            this.regained();
            delay = 500;
            break;
          } catch (e) {
            this.lost(e);
          }
        }
      }
    }
  }

  /** rethrows what is not a lost server, and gives up after forMs */
  private lost(err: unknown): void {
    if (err instanceof WorkflowNotFoundError || err instanceof WorkflowFailedError || !isUnreachable(err)) throw err;
    if (this.lostAt === undefined) {
      this.lostAt = Date.now();
      this.print(`  … lost contact with the Temporal server; retrying for up to ${Math.round(this.forMs / 60_000)} min (the run goes on without us)`);
    } else if (Date.now() - this.lostAt > this.forMs) {
      throw new LostContactError(this.runId, this.forMs);
    }
  }

  private regained(): void {
    if (this.lostAt === undefined) return;
    this.print(`  … reconnected to the Temporal server after ${Math.round((Date.now() - this.lostAt) / 1000)} s`);
    this.lostAt = undefined;
  }
}

/** gRPC UNAVAILABLE / DEADLINE_EXCEEDED / UNKNOWN transport failures, however the SDK wraps them. */
function isUnreachable(err: unknown): boolean {
  for (let e = err as { code?: number; cause?: unknown; message?: string } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === 14 || e.code === 4) return true;
    if (/UNAVAILABLE|ECONNREFUSED|Failed to describe workflow|connection|transport/i.test(e.message ?? '')) return true;
  }
  return false;
}

/** The children of a run of parallel attempts that are still at work, as they stand now. */
async function childrenWaiting(handle: WorkflowHandle<typeof kilnRun>, st: RunState): Promise<RunState[]> {
  if (!st.children?.length || TERMINAL_PHASES.includes(st.phase)) return [];
  const states = await Promise.all(st.children.map((c) => readState(handle.client.getHandle<typeof kilnRun>(c.runId))));
  return states.filter((s): s is RunState => !!s && s.pendingApprovals.length > 0);
}

/** Follows a run live until it closes: phase changes, tool calls, approvals with how to answer. */
export async function follow(handle: WorkflowHandle<typeof kilnRun>, o: FollowOptions): Promise<void> {
  const contact = o.contact ?? new Contact(handle.workflowId, o.print);
  const isClosed_ = () => contact.keep(() => isClosed(handle));
  let lastSeq = 0;
  const announced = new Set<string>();
  let warnedNoWorker = false;
  let quietSince = Date.now();
  let lookedAt = 0;
  let diskLookedAt = 0;
  for (;;) {
    const st = await readState(handle);
    if (st) {
      warnedNoWorker = false;
      for (const l of st.log.filter((l) => l.seq > lastSeq)) {
        o.print(formatLine(l));
        o.onLine?.(l);
      }
      if (st.logSeq > lastSeq) quietSince = Date.now();
      lastSeq = Math.max(lastSeq, st.logSeq);
      // a quiet turn may be running a command inside it: say which, once, as a lone call would
      const now = Date.now();
      if ((st.phase === 'planning' || st.phase === 'editing') && now - quietSince >= RUNNING_AFTER_MS && now - lookedAt >= RUNNING_AFTER_MS) {
        lookedAt = now;
        const call = await runningCall(handle).catch(() => undefined);
        if (call && !announced.has(`running:${call.turn}:${call.running}`)) {
          announced.add(`running:${call.turn}:${call.running}`);
          const line: LogLine = { seq: lastSeq, at: new Date().toISOString(), kind: 'tool', text: `${call.running} … running` };
          o.print(formatLine(line));
          o.onLine?.(line);
        }
      }
      // a quiet run in any phase may be waiting on a full disk: said once a try
      if (!TERMINAL_PHASES.includes(st.phase) && now - quietSince >= RUNNING_AFTER_MS && now - diskLookedAt >= RUNNING_AFTER_MS) {
        diskLookedAt = now;
        const wait = await diskWait(handle).catch(() => undefined);
        if (wait && !announced.has(`disk:${wait.activity}:${wait.attempt}`)) {
          announced.add(`disk:${wait.activity}:${wait.attempt}`);
          const line: LogLine = { seq: lastSeq, at: new Date().toISOString(), kind: 'note', text: diskWaitLine(wait, now) };
          o.print(formatLine(line));
          o.onLine?.(line);
        }
      }
      for (const a of st.pendingApprovals) {
        if (announced.has(a.id)) continue;
        announced.add(a.id);
        o.print(formatApproval(st.runId, a, o.uiUrl));
        await o.onApproval?.(a, st);
      }
      // parallel attempts: what each child waits for is the run's to answer, under the child's id
      for (const child of await childrenWaiting(handle, st)) {
        for (const a of child.pendingApprovals) {
          if (announced.has(`${child.runId}:${a.id}`)) continue;
          announced.add(`${child.runId}:${a.id}`);
          o.print(formatApproval(child.runId, a, o.uiUrl));
        }
      }
      if (st.phase === 'needs_human' && !announced.has(`human:${st.logSeq}`)) {
        announced.add(`human:${st.logSeq}`);
        o.print(`  ⏸  a person is needed: ${st.reason ?? ''}\n     kiln hint ${st.runId} "TEXT" | kiln accept ${st.runId} | kiln abandon ${st.runId}`);
      }
      if (TERMINAL_PHASES.includes(st.phase) && (await isClosed_())) return;
    } else if (await isClosed_()) {
      return;
    } else if (!warnedNoWorker) {
      warnedNoWorker = true;
      o.print('  … no worker answers: the run waits until one starts (`kiln worker` or `kiln dev`)');
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 400));
  }
}

export function formatLine(l: LogLine): string {
  const icon = { phase: '▸', turn: '·', tool: '  ↳', approval: '  ✋', verdict: '  ⚖', human: '  👤', note: '  ·' }[l.kind] ?? '  ·';
  return `${icon} ${l.text}`;
}

export function formatApproval(runId: string, a: PendingApproval, uiUrl?: string): string {
  const parsed = a.segments?.length
    ? a.segments.map((s) => `       ${s.via?.length ? `[${s.via.join(' > ')}] ` : ''}${s.text}`).join('\n')
    : `       ${a.summary}`;
  return [
    `  ✋ approval ${a.id} needed: ${a.summary}`,
    `     why: ${a.reason} (${a.rule})`,
    `     parsed:`,
    parsed,
    ...(a.approvals
      ? [`     needs:   ${approvalProgress(a)}: approve or reject in the kiln serve inbox`]
      : [
          `     approve: kiln approve ${runId} ${a.id}      (add --for-run to allow this kind of call for the rest of the run)`,
          `     reject:  kiln reject ${runId} ${a.id} --reason "..."`,
        ]),
    uiUrl ? `     or in the Web UI: ${workflowUrl(uiUrl, runId)}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

export function formatSummary(r: RunResult): string {
  return [
    `${r.state === 'succeeded' ? '✔' : r.state === 'cancelled' ? '✖' : '✘'} ${r.runId}: ${r.state}${r.reason ? ` — ${r.reason}` : ''}${r.scripted ? '  [SCRIPTED model: not a real model run]' : ''}`,
    `  attempts ${r.attempts} · turns ${r.turns} · tokens in ${r.tokens.input} / out ${r.tokens.output} / cache read ${r.tokens.cacheRead} / cache write ${r.tokens.cacheWrite} · $${r.costUsd.toFixed(4)}`,
    `  artifacts: ${shellQuote(r.artifactsDir)}`,
    `  patch:     ${shellQuote(r.patchPath)}`,
    ...keptWorktree(r),
  ].join('\n');
}

/** A run that did not succeed keeps its worktree for inspection: say where, and how it goes. */
function keptWorktree(r: RunResult): string[] {
  if (r.state === 'succeeded' || r.state === 'cancelled') return [];
  const wt = r.artifactsDir.replace(/\/runs\/([^/]+)$/, '/worktrees/$1');
  if (wt === r.artifactsDir || !existsSync(wt)) return [];
  const repo = r.artifactsDir.replace(/\/\.kiln\/runs\/[^/]+$/, '');
  return [`  worktree:  ${shellQuote(wt)} (kept for inspection; \`kiln clean --repo ${shellQuote(repo)}\` removes finished runs' worktrees)`];
}

export function jsonSummary(r: RunResult): string {
  return JSON.stringify({
    runId: r.runId,
    workflowId: r.runId,
    state: r.state,
    reason: r.reason ?? null,
    attempts: r.attempts,
    turns: r.turns,
    artifactsDir: r.artifactsDir,
    patchPath: r.patchPath,
    tokens: r.tokens,
    costUsd: r.costUsd,
    scripted: r.scripted,
  });
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error('timeout')), ms)))]);
  } finally {
    clearTimeout(t);
  }
}

/** The RunInput the run was started with, from its history: works with no worker running. */
export async function startInput(handle: WorkflowHandle): Promise<RunInput | undefined> {
  try {
    const history = await handle.fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    return payload ? defaultPayloadConverter.fromPayload<RunInput>(payload) : undefined;
  } catch {
    return undefined;
  }
}

/** Open runs that wait for an approval right now (asks each open run; needs a worker to answer). */
export async function waitingRuns(client: Client, max = 50): Promise<string[]> {
  const found: string[] = [];
  let n = 0;
  for await (const w of client.workflow.list({ query: `WorkflowType = '${WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'` })) {
    const st = await readState(client.workflow.getHandle<typeof kilnRun>(w.workflowId));
    if (st?.pendingApprovals.length) found.push(w.workflowId);
    if (++n >= max) break;
  }
  return found;
}

/** events.jsonl for people: the run's log lines (the ones the live view shows), with their time. */
export function formatEvents(jsonl: string): string[] {
  const lines: string[] = [];
  for (const raw of jsonl.split('\n')) {
    if (!raw.trim()) continue;
    let e: { at?: string; type?: string; seq?: number; text?: string; activity?: string; attempt?: number };
    try {
      e = JSON.parse(raw);
    } catch {
      continue;
    }
    const time = e.at ? e.at.slice(11, 19) : '--:--:--';
    // written by the worker, not the workflow: a crash or a timeout made Temporal retry a step
    if (e.type === 'activity_retry') lines.push(`${time}   ↻ ${e.activity} retried (attempt ${e.attempt})`);
    if (typeof e.seq !== 'number' || typeof e.text !== 'string') continue;
    lines.push(`${time} ${formatLine({ seq: e.seq, at: e.at ?? '', kind: e.type as LogLine['kind'], text: e.text })}`);
  }
  return lines;
}
