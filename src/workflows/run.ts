/**
 * The Kiln run workflow: prepare a worktree, run attempts until one is verified, and end in
 * succeeded, blocked or cancelled; a person decides when attempts cannot. Orchestration only:
 * every effect is an activity, the phases and their order are the table in ./machine.ts, an
 * attempt's turn loop is ./attempt.ts, the messages are ./handlers.ts and the state is
 * ./context.ts (whose snapshot is the continue-as-new carry).
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { RUN_NOT_ACHIEVED } from '../shared/constants.js';
import { childSpendSignal } from '../shared/messages.js';
import { PATCH_FILE } from '../shared/paths.js';
import { runInputProblemOf } from '../shared/run-input-check.js';
import { DEFAULT_HOST_LOSS_MS, type HumanDecision, type Review, type RunInput, type RunResult, type Verdict } from '../shared/types.js';
import { KilnRepo } from '../shared/search-attributes.js';
import { approvePatch, approveSetup } from './approval-gates.js';
import { releaseLeftovers } from './budget-park.js';
import { reviewRetryPrompt, reviewVerified } from './review.js';
import { fanOut } from './fan-out.js';
import { runAttempt } from './attempt.js';
import { RunContext, type Carry } from './context.js';
import { freshLoop, type LoopState } from '../loop/state.js';
import { installHandlers } from './handlers.js';
import { afterVerdict, observe } from './machine.js';
import { failureReason, hostOptions, isHostLost, shared, sharedOptions } from './options.js';

export async function kilnRun(input: RunInput, carry?: Carry): Promise<RunResult> {
  // The input is a request from whoever reached Temporal, not only from kiln's CLI: a malformed
  // one ends here, before a single activity is scheduled for it (the worker checks it again).
  const problem = carry ? undefined : runInputProblemOf(input);
  if (problem !== undefined) return notAchieved(refused(input, problem));
  if (!carry && (input.attempts ?? 1) > 1) return fanOut(input, input.attempts!);
  const r = await runToEnd(input, carry);
  if (r.state === 'blocked') return notAchieved(r);
  return r;
}

function notAchieved(r: RunResult): never {
  throw ApplicationFailure.create({
    type: RUN_NOT_ACHIEVED,
    message: `blocked: ${r.reason ?? 'the goal was not reached'}`,
    nonRetryable: true,
    details: [r],
  });
}

/** A refused request has no worktree and no artifacts: the result says which field to fix. */
function refused(input: unknown, problem: string): RunResult {
  const id = (input as { runId?: unknown } | null)?.runId;
  return {
    runId: typeof id === 'string' && id.length <= 200 ? id : workflowInfo().workflowId,
    state: 'blocked',
    reason: `run input refused by the workflow: ${problem}`,
    attempts: 0,
    turns: 0,
    artifactsDir: '',
    patchPath: '',
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    costUsd: 0,
    scripted: false,
  };
}

/** What follows an attempt: the next attempt (its loop), a person's decision, or the end of the run. */
type AfterAttempt = { kind: 'attempt'; loop: LoopState } | { kind: 'human'; reason: string } | { kind: 'finish'; ok: boolean; verifiedTree?: string };

async function runToEnd(input: RunInput, carry?: Carry): Promise<RunResult> {
  const ctx = new RunContext(input, carry);
  installHandlers(ctx);
  try {
    if (!ctx.prep && !(await prepare(ctx))) return await finish(ctx, false);
    let loop = carry?.loop ?? freshLoop(false);
    for (;;) {
      let after: AfterAttempt;
      try {
        after = await attemptOnce(ctx, loop);
      } catch (err) {
        // the one place a lost host is met (finish writes the artifacts anywhere itself): the
        // attempt, its verification or the checks before it ships go on from a rebuilt worktree
        if (!isHostLost(err)) throw err;
        loop = await rebuildElsewhere(ctx);
        continue;
      }
      if (after.kind === 'human') after = await askPerson(ctx, after.reason);
      if (after.kind === 'finish') return await finish(ctx, after.ok, after.verifiedTree);
      loop = after.loop;
    }
  } catch (err) {
    return await endOnFailure(ctx, err);
  }
}

/** One attempt and its verdict: what follows it. */
async function attemptOnce(ctx: RunContext, loop: LoopState): Promise<AfterAttempt> {
  const { state } = ctx;
  const end = await runAttempt(ctx, loop);
  if (end.kind === 'budget') {
    state.reason = `budget exhausted: ${end.which}`;
    ctx.phase('blocked', state.reason);
    return { kind: 'finish', ok: false };
  }
  if (end.kind === 'approval_timeout') return { kind: 'human', reason: `approval ${end.approvalId} timed out; a person must decide how to go on` };
  if (end.kind === 'stuck') {
    ctx.note('verdict', `stuck: ${end.why}`);
    return judge(ctx, loop, stuckVerdict(end.why));
  }
  ctx.phase('verifying');
  // the verdict is judged against the baseline taken beside the turns
  if (ctx.baseline) {
    ctx.baseline.want();
    await ctx.baseline.settled;
  }
  ctx.baseline = undefined;
  const verdict = await ctx.host!.verify.executeWithOptions({ ...hostOptions(ctx.input), summary: `verify attempt ${state.attempt}` }, [
    { ...ctx.ref(), events: ctx.takeUnwritten(), attempt: state.attempt, gateSatisfied: end.gateSatisfied },
  ]);
  ctx.note('verdict', verdict.summary);
  return judge(ctx, loop, verdict);
}

/** A verdict's consequence: success once the verified tree is still the worktree's (and its patch approved), a retry, or a person. */
async function judge(ctx: RunContext, ended: LoopState, verdict: Verdict): Promise<AfterAttempt> {
  const { state } = ctx;
  state.verdict = verdict;
  observe(state, verdict.summary);
  // no checks, or checks that could not run: a person decides; no attempt is spent on it
  const next = verdict.cause && !verdict.pass ? stopForCause(verdict) : afterVerdict(state, verdict, ctx.previousSignature);
  ctx.previousSignature = verdict.signature;
  if (next.next === 'succeeded') {
    // the tree that was verified must still be the worktree's: then that tree is what ships
    const bound = verdict.modelTree;
    // a patch over the policy's size waits for its approvers; refused, a person decides how to go on
    let stale = bound ? await staleVerdict(ctx, bound) : undefined;
    if (!stale) {
      const reviewed = await reviewVerified(ctx, verdict, bound);
      if (reviewed.kind === 'retry') return retryAfterReview(ctx, ended, reviewed.findings);
      if (reviewed.kind === 'human') return { kind: 'human', reason: reviewed.reason };
    }
    if (!stale) stale = await approvePatch(ctx, bound);
    if (!stale) {
      // succeeded with no checks run (--unverified) says so wherever the end state is shown
      state.reason = ctx.prep!.checks.length ? undefined : UNVERIFIED_REASON;
      ctx.phase('succeeded', state.reason);
      return { kind: 'finish', ok: true, verifiedTree: bound };
    }
    // not the model's failure (its turns were over): no attempt is spent, a person decides
    ctx.note('verdict', stale);
    return { kind: 'human', reason: stale };
  }
  ctx.fail(`attempt ${state.attempt}: ${verdict.summary}`);
  if (next.next !== 'retry') return { kind: 'human', reason: next.reason };
  state.attempt = next.attempt;
  ctx.phase('retrying', verdict.summary);
  const loop = freshLoop(true, retryPrompt(state.attempt, state.maxAttempts, verdict.summary));
  // what the ended attempt owed the stop gate, the retry still owes (a stuck attempt included)
  loop.editedSinceChecks = ended.editedSinceChecks;
  loop.checksSinceEdit = [...ended.checksSinceEdit];
  return { kind: 'attempt', loop };
}

/** The reviewer asked for changes and attempts are left: the next attempt starts from its findings. */
function retryAfterReview(ctx: RunContext, ended: LoopState, review: Review): AfterAttempt {
  const { state } = ctx;
  ctx.fail(`attempt ${state.attempt}: the reviewer requested changes: ${review.summary}`);
  state.attempt += 1;
  ctx.previousSignature = undefined;
  ctx.phase('retrying', 'the independent review requested changes');
  const loop = freshLoop(true, reviewRetryPrompt(state.attempt, state.maxAttempts, review));
  loop.editedSinceChecks = ended.editedSinceChecks;
  loop.checksSinceEdit = [...ended.checksSinceEdit];
  return { kind: 'attempt', loop };
}

/** needs_human until a person answers: a hint starts the next attempt, an accept ends the run (its patch approved), else it is blocked. */
async function askPerson(ctx: RunContext, reason: string): Promise<Exclude<AfterAttempt, { kind: 'human' }>> {
  const { state, input } = ctx;
  let decision = await waitForHuman(ctx, reason);
  while (decision?.action === 'accept') {
    // accepting the work is not approving a patch over the size: its approvers still decide
    const refused = await approvePatch(ctx);
    if (!refused) break;
    decision = await waitForHuman(ctx, `${refused}; a person decides: hint to retry, accept to ask again, or abandon`);
  }
  if (decision?.action === 'hint') {
    state.attempt += 1;
    state.maxAttempts = Math.max(state.maxAttempts, state.attempt);
    ctx.previousSignature = undefined;
    ctx.phase('retrying', `hint from ${decision.by ?? 'a person'}`);
    return { kind: 'attempt', loop: freshLoop(false, `A person looked at your work and says:\n${decision.text}\n\nContinue from here.`) };
  }
  if (decision?.action === 'accept') {
    state.acceptedBy = decision.by ?? 'unknown';
    state.reason = `accepted by ${state.acceptedBy}`;
    ctx.phase('succeeded', state.reason);
    return { kind: 'finish', ok: true };
  }
  state.reason = decision ? `abandoned by ${decision.by ?? 'a person'}` : `no decision within ${input.humanTimeoutMs} ms`;
  ctx.phase('blocked', state.reason);
  return { kind: 'finish', ok: false };
}

/**
 * An activity that cannot succeed (a refused API key, a broken script, retries exhausted) ends the
 * run as blocked with the reason, and the artifacts are still written. A cancelled run ends
 * cancelled whatever failed on the way — the model call the cancel aborted, an activity whose
 * worker died while it stopped — and records who cancelled it and cleans up before it ends.
 */
async function endOnFailure(ctx: RunContext, err: unknown): Promise<RunResult> {
  const { state } = ctx;
  const cancelled = isCancellation(err) || CancellationScope.current().consideredCancelled;
  if (!cancelled && err instanceof ActivityFailure) {
    state.reason = failureReason(err);
    ctx.phase('blocked', state.reason);
    return await finish(ctx, false);
  }
  if (!cancelled) throw err;
  await CancellationScope.nonCancellable(async () => {
    const who = ctx.cancelRequest;
    state.reason = who ? `cancelled by ${who.by}${who.reason ? `: ${who.reason}` : ''}` : 'cancelled by request';
    state.pendingApprovals = [];
    ctx.phase('cancelled');
    if (who) await ctx.audit({ kind: 'cancel', by: who.by, note: who.reason, what: who.via ? `cancel (client ${who.via})` : 'cancel' });
    await finish(ctx, true);
    await tellParentSpend(ctx);
  });
  // the execution ends as cancelled, not failed with what the cancel interrupted
  throw isCancellation(err) ? err : new CancelledFailure(state.reason);
}

/** A cancelled child of parallel attempts: its parent counts what it spent (it is delivered before this run closes). */
async function tellParentSpend(ctx: RunContext): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  const b = ctx.state.budget;
  const spend = {
    runId: ctx.input.runId,
    tokens: { input: b.input, output: b.output, cacheRead: b.cacheRead, cacheWrite: b.cacheWrite },
    costUsd: b.costUsd,
    turns: b.turns,
  };
  // a parent that has closed already has nobody to tell
  await getExternalWorkflowHandle(parent.workflowId, parent.runId)
    .signal(childSpendSignal, spend)
    .catch(() => undefined);
}

/** Creates the worktree on whichever worker takes it; false when setup failed (the run is blocked). */
async function prepare(ctx: RunContext): Promise<boolean> {
  const { input, state } = ctx;
  if (input.searchAttributes) upsertSearchAttributes([{ key: KilnRepo, value: input.repo }]);
  ctx.phase('preparing');
  // who started the run is known before any approval is counted: the starter is not one of its approvers
  if (input.requestedBy) await auditStarter(ctx);
  let prep = await shared.prepareWorkspace.executeWithOptions({ ...sharedOptions(input), summary: `prepare worktree for ${input.runId}` }, [
    input,
    undefined,
    { baselineApart: true, approvals: true, execution: workflowInfo().firstExecutionRunId },
  ]);
  // the order of these keys is the order of state.json's fields
  state.worktree = prep.worktree;
  state.baseCommit = prep.baseCommit;
  ctx.useWorkspace(prep);
  const held = prep.setupHeld;
  if (held) {
    // the setup runs with network: the policy wants it approved first, and then exactly it runs, on the worktree's host
    const refused = await approveSetup(ctx, held);
    if (refused) {
      state.reason = refused;
      ctx.phase('blocked', 'setup not approved');
      return false;
    }
    state.setupApproved = held.hash;
    ctx.phase('preparing', 'setup approved: it runs');
    prep = await ctx.host!.prepareWorkspace.executeWithOptions(
      { ...hostOptions(input), summary: `approved setup: ${held.commands.join(' && ')}`.slice(0, 200) },
      [input, undefined, { baselineApart: true, approvals: true, setupApproved: held.hash, execution: workflowInfo().firstExecutionRunId }],
    );
    ctx.useWorkspace(prep);
  }
  if (!prep.ok) {
    state.reason = prep.reason;
    ctx.phase('blocked', 'setup failed');
    return false;
  }
  ctx.note('note', `worktree ${prep.worktree} at ${prep.baseCommit.slice(0, 12)}; checks: ${prep.checks.join(' && ') || 'none'}`);
  if (prep.checks.length) takeBaselineBeside(ctx);
  if (input.allowUnverified) {
    ctx.note('note', 'UNVERIFIED allowed: a repo with no checks may end succeeded, as the user asked (--unverified)');
    await ctx.audit({
      kind: 'verification',
      decision: 'unverified allowed',
      what: 'a run with no checks may succeed without verification',
      by: 'run option --unverified',
    });
  }
  if (input.sandbox === 'off') {
    ctx.note('note', 'SANDBOX OFF: commands run unsandboxed on this machine, as the user asked (--sandbox off)');
    await ctx.audit({ kind: 'sandbox', decision: 'off', what: 'commands run without the bubblewrap sandbox', by: 'run option --sandbox off' });
  }
  return true;
}

/** How long a run started with a claimed starter waits for `kiln serve`'s signed start (sent right after the start). */
const STARTER_WAIT_MS = 10_000;

/**
 * The audit's first word on the run: who asked for it, as a worker checked it against the start
 * `kiln serve` signed for this very execution, not as the input claims. A start the server did
 * not sign for this execution (the input of another run sent again under its id) is recorded as
 * the self-declared claim it is.
 */
async function auditStarter(ctx: RunContext): Promise<void> {
  const { input, state } = ctx;
  const execution = workflowInfo().firstExecutionRunId;
  let checked = 0;
  let identity: Awaited<ReturnType<typeof shared.identifyStarter>> | undefined;
  const deadline = Date.now() + STARTER_WAIT_MS;
  for (;;) {
    const left = deadline - Date.now();
    const arrived = left > 0 && (await condition(() => ctx.startClaims.length > checked, left, { summary: 'waiting for the signed start' }));
    const candidates = ctx.startClaims.slice(checked);
    checked = ctx.startClaims.length;
    if (!arrived && identity) break;
    identity = await shared.identifyStarter({ runId: input.runId, execution, requestedBy: input.requestedBy!, candidates });
    if (identity.kind === 'authenticated' || !arrived) break;
  }
  const { repo, ...who } = identity;
  if (who.kind === 'authenticated' && repo !== input.repo) {
    who.kind = 'self-declared';
    who.unverified = `the signed start names repo ${repo}, not this run's ${input.repo}`;
  }
  state.startedBy = { name: who.name, kind: who.kind, ...(who.tenant && who.kind === 'authenticated' ? { tenant: who.tenant } : {}) };
  ctx.note(
    'note',
    `started by ${who.name} (${who.kind}${who.kind === 'authenticated' && who.tenant ? `, tenant ${who.tenant}` : ''}${who.unverified ? `; ${who.unverified}` : ''})`,
  );
  await ctx.audit({ kind: 'start', decision: 'started', what: input.goal.slice(0, 300), by: who.name, identity: who });
}

/**
 * The baseline on the worktree's host, without holding back the model: it starts once the first
 * turn is done (its git and sandbox would otherwise share the worker with the first model
 * request), or when the first verify wants it, which awaits it. A baseline that fails or is lost
 * with its host is not the run's end: verify takes it itself when baseline.json is missing.
 */
function takeBaselineBeside(ctx: RunContext): void {
  const scope = new CancellationScope();
  let wanted = false;
  const settled = scope
    .run(async () => {
      await condition(() => wanted || ctx.state.turn > 1);
      await ctx.host!.takeBaseline.executeWithOptions(
        {
          ...hostOptions(ctx.input),
          // a run that ends while its baseline runs waits for the checks to stop: nothing may write into its files after the end
          cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
          summary: 'baseline: the checks on the pristine base',
        },
        [{ runId: ctx.input.runId, repo: ctx.input.repo }],
      );
    })
    .then(
      () => undefined,
      () => undefined,
    );
  ctx.baseline = { settled, want: () => void (wanted = true), cancel: () => scope.cancel() };
}

/** A run that ends or moves host before its first verify does not leave its baseline running. */
function dropBaseline(ctx: RunContext): Promise<void> | undefined {
  const b = ctx.baseline;
  b?.cancel();
  ctx.baseline = undefined;
  return b?.settled;
}

/**
 * The worktree's host stopped taking work: rebuild the worktree on whichever worker takes the
 * shared queue, from the base commit plus the last checkpoint, and start the attempt's loop
 * over on a fresh conversation that says what happened.
 */
async function rebuildElsewhere(ctx: RunContext): Promise<LoopState> {
  const { input, state, checkpoint } = ctx;
  const lost = ctx.prep!.hostQueue;
  state.pendingApprovals = [];
  // the rebuild takes the baseline itself (if the lost host did not leave it), as before;
  // the old one is not waited for: its host is the one that is gone
  void dropBaseline(ctx);
  ctx.note(
    'note',
    `host ${lost} took no work for ${input.hostLossTimeoutMs ?? DEFAULT_HOST_LOSS_MS} ms: rebuilding the worktree elsewhere from the base${checkpoint ? ` + the checkpoint of turn ${checkpoint.turn}` : ''}`,
  );
  ctx.phase('preparing', `rebuilding after losing ${lost}`);
  const rebuild = { lostHost: lost, patch: checkpoint?.patch, turn: checkpoint?.turn ?? 0 };
  // the rebuild runs the setup again: only the one its approvers approved, and the patch rule stays known
  const approvals = ctx.prep?.patchRule || state.setupApproved ? { approvals: true, setupApproved: state.setupApproved } : undefined;
  const execution = workflowInfo().firstExecutionRunId;
  const prep = await shared.prepareWorkspace.executeWithOptions({ ...sharedOptions(input), summary: `rebuild worktree (host ${lost} lost)` }, [
    input,
    rebuild,
    { ...approvals, execution },
  ]);
  ctx.useWorkspace(prep);
  const restored = prep.restored;
  const what = restored?.applied
    ? `your changes up to turn ${restored.turn} were restored (${restored.files.join(', ') || 'no files'}); anything after that was lost`
    : `none of your changes could be restored (${restored?.note ?? 'no checkpoint'})`;
  ctx.note('note', `rebuilt on ${prep.hostQueue}: ${what}`);
  ctx.phase(state.attempt === 1 && !state.touchedFiles.length ? 'planning' : 'editing');
  return freshLoop(
    false,
    `The machine that ran this task was lost. Kiln rebuilt the worktree on another machine from the base commit: ${what}. Check the current state (read the files, run the checks) and continue.`,
  );
}

/** needs_human: wait for a hint, an accept or an abandon (the handlers set it), or the timeout. */
async function waitForHuman(ctx: RunContext, reason: string): Promise<HumanDecision | undefined> {
  ctx.state.reason = reason;
  ctx.human = undefined;
  ctx.phase('needs_human', reason);
  await condition(() => ctx.human !== undefined, ctx.input.humanTimeoutMs, { summary: 'waiting for a person: hint, accept or abandon' });
  const d = ctx.takeHuman();
  if (d) {
    ctx.note('human', `${d.action} by ${d.by ?? 'unknown'}${d.text ? `: ${d.text}` : ''}`);
    await ctx.audit({ kind: 'human', action: d.action, by: d.by ?? 'unknown', note: d.text });
  }
  return d;
}

/**
 * Why a passing verdict no longer speaks for the worktree, if it does not: something wrote to it
 * after the checks ran (the model's turns were over), so what would ship is not what was verified.
 */
async function staleVerdict(ctx: RunContext, verified: string): Promise<string | undefined> {
  const now = await ctx.host!.currentTree.executeWithOptions({ ...hostOptions(ctx.input), summary: 'is the verified tree still the worktree?' }, [
    { ...ctx.ref(), events: ctx.takeUnwritten() },
  ]);
  if (now === verified) return undefined;
  return `the worktree changed after it was verified (verified tree ${verified.slice(0, 12)}, now ${now.slice(0, 12)}): a person decides — hint to retry, accept as it is, or abandon`;
}

/** Writes the artifacts (a lost host cannot: then any worker writes what the run knows) and the result. */
async function finish(ctx: RunContext, removeWorktree: boolean, verifiedTree?: string): Promise<RunResult> {
  const { state, input } = ctx;
  // nothing of the run's may still be writing once it has ended (the cancel reaches it within a heartbeat)
  const stopping = dropBaseline(ctx);
  if (stopping) await stopping;
  state.budget.wallMs = ctx.elapsedMs();
  ctx.showDetails();
  await ctx.auditPreApprovals();
  let patchPath = `${state.artifactsDir}/${PATCH_FILE}`;
  let diskNote: string | undefined;
  if (ctx.prep) {
    const args = { ...ctx.ref(), events: ctx.takeUnwritten(), state, removeWorktree, ...(verifiedTree ? { verifiedTree } : {}) };
    const res = await (ctx.host ?? shared).finalizeRun(args).catch((err: unknown) => {
      if (!isHostLost(err)) throw err;
      return shared.finalizeRun(args);
    });
    patchPath = res.patchPath;
    diskNote = res.diskNote;
  }
  await releaseLeftovers(ctx);
  return {
    runId: input.runId,
    state: state.phase,
    reason: diskNote ? [state.reason, diskNote].filter(Boolean).join('; ') : state.reason,
    attempts: state.attempt,
    turns: state.turn,
    artifactsDir: state.artifactsDir,
    patchPath,
    tokens: { input: state.budget.input, output: state.budget.output, cacheRead: state.budget.cacheRead, cacheWrite: state.budget.cacheWrite },
    costUsd: state.budget.costUsd,
    scripted: state.scripted,
    acceptedBy: state.acceptedBy,
  };
}

/** The reason of a run that succeeded with nothing verified: only a run started with --unverified gets there. */
const UNVERIFIED_REASON = 'UNVERIFIED: no checks ran; the work was not verified (the run was started with --unverified)';

/** A verdict no retry can fix goes to a person with what to do about it. */
function stopForCause(v: Verdict): { next: 'needs_human'; reason: string } {
  if (v.cause === 'no_checks') return { next: 'needs_human', reason: 'no checks: say how to verify, or accept' };
  if (v.cause === 'harness')
    return { next: 'needs_human', reason: `the patch changes how the tests run, which only a person may take (kiln accept), not a retry:\n${v.summary}` };
  return { next: 'needs_human', reason: `infrastructure: the checks could not run, which no retry of the model can fix:\n${v.summary}` };
}

/** A stuck attempt counts like a failed verification, with a signature of its own kind. */
function stuckVerdict(why: string): Verdict {
  const kind = why.replace(/[\d]+/g, 'N').replace(/:.*$/, '');
  return { pass: false, checks: [], outOfScope: [], protectedChanged: [], changedFiles: [], signature: `stuck:${kind}`, summary: `stuck: ${why}` };
}

function retryPrompt(attempt: number, max: number, summary: string): string {
  return [
    `Verification failed. This is attempt ${attempt} of ${max}.`,
    `Failures:\n${summary}`,
    'Before you edit anything, call reflect with: attempt, last_failure, last_cause, this_fix, rationale, changed_files.',
    'Then fix the cause, run the checks, and call finish.',
  ].join('\n\n');
}
