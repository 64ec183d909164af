/**
 * The Kiln run workflow: orchestration only. Every effect is an activity; every decision that
 * can be made without a server lives in ./machine.ts and ./stuck.ts.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityInterfaceFor,
} from '@temporalio/workflow';
import type { createActivities } from '../activities/index.js';
import type { Checkpoint, PrepareResult, RunToolResult, ToolCallView } from '../activities/contracts.js';
import { approveSignal, approveUpdate, humanSignal, humanUpdate, statusQuery } from '../shared/messages.js';
import { PATCH_FILE } from '../shared/paths.js';
import {
  DEFAULT_HOST_LOSS_MS,
  DEFAULT_TURNS_PER_RUN,
  type ApprovalDecision,
  type HumanDecision,
  type RunInput,
  type RunResult,
  type RunState,
  type Verdict,
} from '../shared/types.js';
import { KilnPhase, KilnRepo } from '../temporal/search-attributes.js';
import {
  addUsage,
  afterVerdict,
  approvalProblem,
  budgetExceeded,
  findApproval,
  initialState,
  log,
  observe,
  setPhase,
  totalTokens,
  touch,
} from './machine.js';
import { freshStuck, observeCall, observeIdleTurn, type StuckState } from './stuck.js';

type Activities = ReturnType<typeof createActivities>;
type Acts = ActivityInterfaceFor<Activities>;

/** Errors that no retry can fix: bad config, a model that refuses the key, a broken script. */
const NON_RETRYABLE = ['KilnConfigError', 'ModelFatalError', 'ScriptError', 'SandboxUnavailableError'];
/** Tools that only look: a turn's leading run of them is executed in one activity. */
const READ_ONLY_TOOLS = new Set(['read_file', 'list_files', 'search', 'update_plan']);
/** Failures kept for the compaction summary and the Web UI. */
const MAX_FAILURES = 10;

/** prepareWorkspace runs on the shared queue; the worker that ran it names its host queue. */
const shared = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '60 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: NON_RETRYABLE },
});

/** The state of the agent loop inside one attempt; carried across continue-as-new. */
interface LoopState {
  editedSinceChecks: boolean;
  checksSinceEdit: string[];
  /** a retry must start with a valid reflection before any edit */
  needReflection: boolean;
  reflectionBounces: number;
  stuck: StuckState;
  /** files may have changed since the last checkpoint */
  dirty: boolean;
  userText?: string;
  toolResults: Record<string, { content: string; isError: boolean }>;
}

/** Everything a continued run needs to go on exactly where the previous run stopped. */
export interface Carry {
  state: RunState;
  startedAtMs: number;
  approvalSeq: number;
  decided: string[];
  expired: string[];
  prep: PrepareResult;
  previousSignature?: string;
  failures: string[];
  loop: LoopState;
  checkpoint?: Extract<Checkpoint, { patch: string }>;
}

type AttemptEnd =
  | { kind: 'finished'; gateSatisfied: boolean }
  | { kind: 'stuck'; why: string }
  | { kind: 'budget'; which: string }
  | { kind: 'approval_timeout'; approvalId: string };

function freshLoop(needReflection: boolean, userText?: string): LoopState {
  return { editedSinceChecks: false, checksSinceEdit: [], needReflection, reflectionBounces: 0, stuck: freshStuck(), dirty: false, userText, toolResults: {} };
}

export async function kilnRun(input: RunInput, carry?: Carry): Promise<RunResult> {
  const state = carry?.state ?? initialState(input);
  const now = () => new Date().toISOString();
  const started = carry?.startedAtMs ?? Date.now();
  const turnsPerRun = input.turnsPerRun ?? DEFAULT_TURNS_PER_RUN;
  const turnAtRunStart = state.turn;

  const decisions = new Map<string, ApprovalDecision>();
  const decided = new Set<string>(carry?.decided);
  const expired = new Set<string>(carry?.expired);
  let human: HumanDecision | undefined;
  let approvalSeq = carry?.approvalSeq ?? 0;
  let previousSignature = carry?.previousSignature;
  const failures: string[] = carry?.failures ?? [];
  /** the worktree's last patch against the base: what a rebuild on another host starts from */
  let checkpoint = carry?.checkpoint;
  /** log lines not yet handed to an activity for events.jsonl (the writer skips seqs it has) */
  let unwritten = carry ? state.log.length : 0;

  const events = () => {
    const fresh = state.log.slice(Math.max(0, state.log.length - unwritten));
    unwritten = 0;
    return fresh;
  };
  const note = (kind: Parameters<typeof log>[2], text: string) => {
    log(state, now(), kind, text);
    unwritten++;
  };
  const details = () =>
    [
      `**${state.phase}** · attempt ${state.attempt}/${state.maxAttempts} · turn ${state.turn}${state.scripted ? ' · SCRIPTED model' : ''}`,
      state.reason ? `reason: ${state.reason}` : '',
      state.pendingApprovals.map((a) => `waiting for approval ${a.id}: ${a.summary}`).join('\n'),
      state.plan.map((s) => `- [${s.status === 'done' ? 'x' : ' '}] ${s.step}`).join('\n'),
    ]
      .filter(Boolean)
      .join('\n');
  const phase = (p: RunState['phase'], why?: string) => {
    setPhase(state, p, now(), why);
    unwritten++;
    setCurrentDetails(details());
    if (input.searchAttributes) upsertSearchAttributes([{ key: KilnPhase, value: p }]);
  };
  const fail = (text: string) => {
    failures.push(text.slice(0, 300));
    if (failures.length > MAX_FAILURES) failures.splice(0, failures.length - MAX_FAILURES);
  };

  const acceptDecision = (d: ApprovalDecision) => {
    decisions.set(d.approvalId, d);
    decided.add(d.approvalId);
  };
  setHandler(statusQuery, () => ({ ...state, budget: { ...state.budget, wallMs: Date.now() - started } }));
  setHandler(
    approveUpdate,
    (d) => {
      acceptDecision(d);
      return `${d.approve ? 'approved' : 'rejected'} ${d.approvalId}`;
    },
    {
      validator: (d) => {
        const problem = approvalProblem(state, decided, expired, d);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(approveSignal, (d) => {
    const problem = approvalProblem(state, decided, expired, d);
    if (problem) note('approval', `ignored approval signal: ${problem}`);
    else acceptDecision(d);
  });
  /** read through a function: handlers set it while the workflow awaits, which narrowing cannot see */
  const takeHuman = (): HumanDecision | undefined => {
    const d = human;
    human = undefined;
    return d;
  };
  const humanProblem = (d: HumanDecision): string | undefined => {
    if (state.phase !== 'needs_human') return `the run is ${state.phase}, not waiting for a person`;
    if (!d || !['hint', 'accept', 'abandon'].includes(d.action)) return 'action must be hint, accept or abandon';
    if (d.action === 'hint' && !d.text?.trim()) return 'a hint needs text';
    if (human) return 'a decision was already sent';
    return undefined;
  };
  setHandler(
    humanUpdate,
    (d) => {
      human = d;
      return `${d.action} accepted`;
    },
    {
      validator: (d) => {
        const problem = humanProblem(d);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(humanSignal, (d) => {
    const problem = humanProblem(d);
    if (problem) note('human', `ignored signal: ${problem}`);
    else human = d;
  });

  const ref = () => ({ runId: input.runId, repo: input.repo, events: events() });
  type AuditEntry = Parameters<Activities['recordAudit']>[0]['entry'];
  /** audit lines go to the worktree's host, or to any worker when that host is gone */
  const audit = (entry: AuditEntry) =>
    (host ?? shared).recordAudit({ ...ref(), entry }).catch((err: unknown) => {
      if (!isHostLost(err)) throw err;
      return shared.recordAudit({ ...ref(), entry });
    });
  let prep: PrepareResult | undefined = carry?.prep;
  let host: Acts | undefined = prep ? proxyActivities<Activities>({ ...hostOptions(input), taskQueue: prep.hostQueue }) : undefined;

  const finish = async (removeWorktree: boolean): Promise<RunResult> => {
    state.budget.wallMs = Date.now() - started;
    setCurrentDetails(details());
    let patchPath = `${state.artifactsDir}/${PATCH_FILE}`;
    if (prep) {
      const args = { ...ref(), state, removeWorktree };
      // a lost host cannot finalize: any worker writes what the run knows
      const res = await (host ?? shared).finalizeRun(args).catch((err: unknown) => {
        if (!isHostLost(err)) throw err;
        return shared.finalizeRun(args);
      });
      patchPath = res.patchPath;
    }
    return {
      runId: input.runId,
      state: state.phase,
      reason: state.reason,
      attempts: state.attempt,
      turns: state.turn,
      artifactsDir: state.artifactsDir,
      patchPath,
      tokens: { input: state.budget.input, output: state.budget.output, cacheRead: state.budget.cacheRead, cacheWrite: state.budget.cacheWrite },
      costUsd: state.budget.costUsd,
      scripted: state.scripted,
      acceptedBy: state.acceptedBy,
    };
  };

  try {
    let loop: LoopState | undefined = carry?.loop;
    if (!prep) {
      if (input.searchAttributes) upsertSearchAttributes([{ key: KilnRepo, value: input.repo }]);
      phase('preparing');
      prep = await shared.prepareWorkspace.executeWithOptions(
        { ...sharedOptions(input), summary: `prepare worktree for ${input.runId}` },
        [input],
      );
      state.worktree = prep.worktree;
      state.baseCommit = prep.baseCommit;
      state.hostQueue = prep.hostQueue;
      host = proxyActivities<Activities>({ ...hostOptions(input), taskQueue: prep.hostQueue });
      if (!prep.ok) {
        state.reason = prep.reason;
        phase('blocked', 'setup failed');
        return await finish(false);
      }
      note('note', `worktree ${prep.worktree} at ${prep.baseCommit.slice(0, 12)}; checks: ${prep.checks.join(' && ') || 'none'}`);
      if (input.allowUnverified && patched('unverified-run')) {
        note('note', 'UNVERIFIED allowed: a repo with no checks may end succeeded, as the user asked (--unverified)');
        await audit({ kind: 'verification', decision: 'unverified allowed', what: 'a run with no checks may succeed without verification', by: 'run option --unverified' });
      }
      if (input.sandbox === 'off') {
        note('note', 'SANDBOX OFF: commands run unsandboxed on this machine, as the user asked (--sandbox off)');
        await audit({ kind: 'sandbox', decision: 'off', what: 'commands run without the bubblewrap sandbox', by: 'run option --sandbox off' });
      }
    }

    for (;;) {
      let end: AttemptEnd;
      const current = loop ?? freshLoop(false);
      try {
        end = await runAttempt(current);
      } catch (err) {
        if (!isHostLost(err)) throw err;
        loop = await rebuildElsewhere();
        continue;
      }
      loop = undefined;
      if (end.kind === 'budget') {
        state.reason = `budget exhausted: ${end.which}`;
        phase('blocked', state.reason);
        return await finish(false);
      }
      let waitReason: string;
      if (end.kind === 'approval_timeout') {
        waitReason = `approval ${end.approvalId} timed out; a person must decide how to go on`;
      } else {
        let verdict: Verdict;
        if (end.kind === 'stuck') {
          verdict = stuckVerdict(end.why);
          note('verdict', `stuck: ${end.why}`);
        } else {
          phase('verifying');
          try {
            verdict = await host!.verify.executeWithOptions(
              { ...hostOptions(input), summary: `verify attempt ${state.attempt}` },
              [{ ...ref(), attempt: state.attempt, gateSatisfied: end.gateSatisfied }],
            );
          } catch (err) {
            if (!isHostLost(err)) throw err;
            loop = await rebuildElsewhere();
            continue;
          }
          note('verdict', verdict.summary);
        }
        state.verdict = verdict;
        observe(state, verdict.summary);
        // no checks, or checks that could not run: a person decides; no attempt is spent on it
        const next = verdict.cause && !verdict.pass && patched('verdict-cause') ? stopForCause(verdict) : afterVerdict(state, verdict, previousSignature);
        previousSignature = verdict.signature;
        if (next.next === 'succeeded') {
          state.reason = undefined;
          phase('succeeded');
          return await finish(true);
        }
        fail(`attempt ${state.attempt}: ${verdict.summary}`);
        if (next.next === 'retry') {
          state.attempt = next.attempt;
          phase('retrying', verdict.summary);
          loop = freshLoop(true, retryPrompt(state.attempt, state.maxAttempts, verdict.summary));
          if (patched('retry-reflects')) {
            // what the ended attempt owed the stop gate, the retry still owes (a stuck attempt included)
            loop.editedSinceChecks = current.editedSinceChecks;
            loop.checksSinceEdit = [...current.checksSinceEdit];
          }
          continue;
        }
        waitReason = next.reason;
      }

      const decision = await waitForHuman(waitReason);
      if (decision?.action === 'hint') {
        state.attempt += 1;
        state.maxAttempts = Math.max(state.maxAttempts, state.attempt);
        previousSignature = undefined;
        phase('retrying', `hint from ${decision.by ?? 'a person'}`);
        loop = freshLoop(false, `A person looked at your work and says:\n${decision.text}\n\nContinue from here.`);
        continue;
      }
      if (decision?.action === 'accept') {
        state.acceptedBy = decision.by ?? 'unknown';
        state.reason = `accepted by ${state.acceptedBy}`;
        phase('succeeded', state.reason);
        return await finish(true);
      }
      state.reason = decision ? `abandoned by ${decision.by ?? 'a person'}` : `no decision within ${input.humanTimeoutMs} ms`;
      phase('blocked', state.reason);
      return await finish(false);
    }
  } catch (err) {
    if (err instanceof ActivityFailure && !isCancellation(err)) {
      // An activity that cannot succeed (a refused API key, a broken script, retries exhausted)
      // ends the run as blocked with the reason, and the artifacts are still written.
      state.reason = failureReason(err);
      phase('blocked', state.reason);
      return await finish(false);
    }
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(async () => {
        state.reason = 'cancelled by request';
        state.pendingApprovals = [];
        phase('cancelled');
        await finish(true);
      });
    }
    throw err;
  }

  /**
   * The worktree's host stopped taking work: rebuild the worktree on whichever worker takes the
   * shared queue, from the base commit plus the last checkpoint, and start the attempt's loop
   * over on a fresh conversation that says what happened.
   */
  async function rebuildElsewhere(): Promise<LoopState> {
    const lost = prep!.hostQueue;
    state.pendingApprovals = [];
    note('note', `host ${lost} took no work for ${input.hostLossTimeoutMs ?? DEFAULT_HOST_LOSS_MS} ms: rebuilding the worktree elsewhere from the base${checkpoint ? ` + the checkpoint of turn ${checkpoint.turn}` : ''}`);
    phase('preparing', `rebuilding after losing ${lost}`);
    prep = await shared.prepareWorkspace.executeWithOptions(
      { ...sharedOptions(input), summary: `rebuild worktree (host ${lost} lost)` },
      [input, { lostHost: lost, patch: checkpoint?.patch, turn: checkpoint?.turn ?? 0 }],
    );
    state.worktree = prep.worktree;
    state.hostQueue = prep.hostQueue;
    host = proxyActivities<Activities>({ ...hostOptions(input), taskQueue: prep.hostQueue });
    const restored = prep.restored;
    const what = restored?.applied
      ? `your changes up to turn ${restored.turn} were restored (${restored.files.join(', ') || 'no files'}); anything after that was lost`
      : `none of your changes could be restored (${restored?.note ?? 'no checkpoint'})`;
    note('note', `rebuilt on ${prep.hostQueue}: ${what}`);
    phase(state.attempt === 1 && !state.touchedFiles.length ? 'planning' : 'editing');
    return freshLoop(false, `The machine that ran this task was lost. Kiln rebuilt the worktree on another machine from the base commit: ${what}. Check the current state (read the files, run the checks) and continue.`);
  }

  async function waitForHuman(reason: string): Promise<HumanDecision | undefined> {
    state.reason = reason;
    human = undefined;
    phase('needs_human', reason);
    await condition(() => human !== undefined, input.humanTimeoutMs);
    const d = takeHuman();
    if (d) {
      note('human', `${d.action} by ${d.by ?? 'unknown'}${d.text ? `: ${d.text}` : ''}`);
      await audit({ kind: 'human', action: d.action, by: d.by ?? 'unknown', note: d.text });
    }
    return d;
  }

  /** Continue-as-new between turns, once this run's history has grown enough; nothing is lost. */
  async function maybeContinueAsNew(loop: LoopState): Promise<void> {
    const info = workflowInfo();
    if (state.turn - turnAtRunStart < turnsPerRun && !info.continueAsNewSuggested) return;
    if (state.pendingApprovals.length) return;
    await condition(allHandlersFinished);
    note('note', `continuing as new after turn ${state.turn} (history ${info.historyLength} events)`);
    const next: Carry = {
      state,
      startedAtMs: started,
      approvalSeq,
      decided: [...decided],
      expired: [...expired],
      prep: prep!,
      previousSignature,
      failures,
      loop,
      checkpoint,
    };
    await continueAsNew<typeof kilnRun>(input, next);
  }

  /** One attempt of the agent loop: turns until the agent finishes, is stuck, or a budget or approval runs out. */
  async function runAttempt(loop: LoopState): Promise<AttemptEnd> {
    const acts = host!;
    const checks = prep!.checks;
    if (state.phase !== 'planning' && state.phase !== 'editing') phase(state.attempt === 1 && state.turn === 0 ? 'planning' : 'editing');
    let cycles: boolean | undefined;
    const cyclesOn = () => (cycles ??= patched('stuck-cycles'));
    const gateSatisfied = () => !loop.editedSinceChecks || checks.every((c) => loop.checksSinceEdit.includes(c));
    const gateAnswer = () =>
      `The stop gate: run the checks first. You edited files since the checks last ran; run ${checks
        .filter((c) => !loop.checksSinceEdit.includes(c))
        .map((c) => `\`${c}\``)
        .join(' and ')} with run_command, then call finish.`;

    for (;;) {
      await maybeContinueAsNew(loop);
      state.budget.wallMs = Date.now() - started;
      const over = budgetExceeded(state.budget, input.budgets);
      if (over) return { kind: 'budget', which: over };

      state.turn += 1;
      const turn = await acts.agentTurn.executeWithOptions(
        { ...modelOptions(input), summary: `turn ${state.turn}: model` },
        [
          {
            ...ref(),
            turn: state.turn,
            attempt: state.attempt,
            userText: loop.userText,
            toolResults: loop.toolResults,
            checkpoint: loop.dirty,
            memory: { plan: state.plan, touchedFiles: state.touchedFiles, failures },
            tokensLeft: Math.max(0, input.budgets.maxTokens - totalTokens(state.budget)),
          },
        ],
      );
      if (turn.budgetStop) {
        state.turn -= 1;
        return { kind: 'budget', which: turn.budgetStop };
      }
      loop.userText = undefined;
      loop.toolResults = {};
      if (turn.checkpoint) {
        loop.dirty = false;
        if ('patch' in turn.checkpoint) checkpoint = turn.checkpoint;
        else {
          checkpoint = undefined;
          note('note', `checkpoint skipped: the patch is ${turn.checkpoint.tooLarge} bytes; a host loss would rebuild from the base`);
        }
      }
      addUsage(state, turn.usage, turn.costUsd);
      state.recentTurns = [...(state.recentTurns ?? []), { turn: state.turn, ...turn.usage, costUsd: turn.costUsd }].slice(-20);
      if (turn.text) observe(state, turn.text);
      if (turn.compacted) note('note', `compacted ${turn.compacted.removedMessages} older messages (${turn.compacted.beforeTokens} → ${turn.compacted.afterTokens} tokens)`);
      if (state.phase === 'planning' && turn.calls.some((c) => c.name !== 'update_plan' && c.name !== 'read_file' && c.name !== 'search' && c.name !== 'list_files')) {
        phase('editing');
      }
      // the turn line says what the model said; each call gets its own line with its outcome
      note('turn', `turn ${state.turn}${turn.text ? `: ${turn.text.split('\n')[0]!.slice(0, 160)}` : turn.calls.length ? '' : ` (${turn.stopReason})`}`);

      let finished = false;
      if (turn.calls.length === 0) {
        // An end_turn without finish counts as a finish attempt.
        if (loop.needReflection && patched('retry-reflects')) {
          loop.userText = 'Reflect first: this is a retry; call reflect before anything else.';
          note('note', 'reflection required before finishing');
          const stuck = observeIdleTurn(loop.stuck);
          if (stuck) return { kind: 'stuck', why: stuck };
        } else if (gateSatisfied()) finished = true;
        else {
          loop.userText = gateAnswer();
          note('note', 'stop gate: finish refused until the checks run');
          const stuck = observeIdleTurn(loop.stuck);
          if (stuck) return { kind: 'stuck', why: stuck };
        }
      }

      const prefetched = await prefetchReads(acts, turn.calls);
      for (const call of turn.calls) {
        let result: { text: string; isError: boolean; malformed: boolean };
        if (call.inputError) {
          loop.toolResults[call.id] = { content: call.inputError, isError: true };
          note('tool', `${call.summary}: invalid call`);
          if (call.name === 'reflect' && loop.needReflection) loop.reflectionBounces += 1;
          result = { text: call.inputError, isError: true, malformed: true };
        } else if (loop.needReflection && !READ_ONLY_TOOLS.has(call.name) && call.name !== 'reflect' && patched('retry-reflects')) {
          // a retry starts with a reflection, whatever ended the attempt: no edit, command or finish before it
          const text = 'Reflect first: this is a retry; call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files before anything else.';
          loop.toolResults[call.id] = { content: text, isError: true };
          note('note', `reflection required before ${call.name}`);
          result = { text, isError: true, malformed: false };
        } else if (call.name === 'finish') {
          if (gateSatisfied()) {
            finished = true;
            loop.toolResults[call.id] = { content: 'Kiln will now verify your work.', isError: false };
          } else {
            loop.toolResults[call.id] = { content: gateAnswer(), isError: true };
            note('note', 'stop gate: finish refused until the checks run');
          }
          result = { text: loop.toolResults[call.id]!.content, isError: !finished, malformed: false };
        } else if (loop.needReflection && (call.name === 'edit' || call.name === 'create_file') && loop.reflectionBounces < 1) {
          // once per retry: edits wait for a reflection; after one bounce the coder may go on
          loop.reflectionBounces += 1;
          const text = 'Reflect first: before editing in a retry, call reflect with attempt, last_failure, last_cause, this_fix, rationale and changed_files.';
          loop.toolResults[call.id] = { content: text, isError: true };
          note('note', 'reflection required before editing');
          result = { text, isError: true, malformed: false };
        } else {
          const early = prefetched.get(call.id);
          if (early) note('tool', `${call.summary}${outcomeSuffix(early)}`);
          const outcome = early ? { kind: 'done' as const, result: early } : await runOneTool(acts, call);
          if (outcome.kind === 'approval_timeout') return outcome;
          const res = outcome.result;
          if (res.status === 'done') {
            if (res.effect === 'edit' || res.effect === 'command') loop.dirty = true;
            if (res.effect === 'edit' && res.path) {
              touch(state, res.path);
              loop.editedSinceChecks = true;
              loop.checksSinceEdit = [];
            }
            if (res.changedPaths?.length && patched('command-edits')) {
              // sed -i, a formatter, a generator: a command's changes are edits for the gate and touchedFiles
              for (const p of res.changedPaths) touch(state, p);
              loop.editedSinceChecks = true;
              loop.checksSinceEdit = [];
            }
            if (res.effect === 'reflect') loop.needReflection = false;
            if (res.checkRan && !loop.checksSinceEdit.includes(res.checkRan)) loop.checksSinceEdit.push(res.checkRan);
            if (res.plan) state.plan = res.plan;
            observe(state, res.summary);
          }
          const isError = res.status !== 'done' || !res.ok;
          result = { text: res.summary, isError, malformed: false };
          if (res.status === 'denied') fail(`denied: ${res.summary} (${res.rule})`);
        }
        const stuck = observeCall(
          loop.stuck,
          { fingerprint: call.fingerprint, result: result.text.slice(0, 300), isError: result.isError, malformed: result.malformed },
          { cycles: cyclesOn() },
        );
        if (stuck && !finished) return { kind: 'stuck', why: stuck };
      }
      if (finished) return { kind: 'finished', gateSatisfied: gateSatisfied() };
    }
  }

  /**
   * The reads a turn starts with run in one activity instead of one each (they cannot need an
   * approval, and nothing before them changes the worktree). Behind patched(): runs started
   * before this change replay through the one-call-per-activity path.
   */
  async function prefetchReads(acts: Acts, calls: ToolCallView[]): Promise<Map<string, RunToolResult>> {
    const lead: ToolCallView[] = [];
    for (const c of calls) {
      if (c.inputError || !READ_ONLY_TOOLS.has(c.name)) break;
      lead.push(c);
    }
    if (lead.length < 2 || !patched('batch-read-tools')) return new Map();
    const results = await acts.runTools.executeWithOptions(
      { ...toolOptions(input), summary: `turn ${state.turn}: ${lead.map((c) => c.summary).join('; ').slice(0, 200)}` },
      [{ ...ref(), toolUseIds: lead.map((c) => c.id), grants: state.grants }],
    );
    return new Map(results.filter((r) => r.result.status !== 'ask').map((r) => [r.id, r.result]));
  }

  async function runOneTool(
    acts: Acts,
    call: ToolCallView,
  ): Promise<{ kind: 'done'; result: RunToolResult } | { kind: 'approval_timeout'; approvalId: string }> {
    const exec = (approvedHash?: string) =>
      acts.runTool.executeWithOptions(
        { ...toolOptions(input), summary: `turn ${state.turn}: ${call.summary}` },
        [{ ...ref(), toolUseId: call.id, approvedHash, grants: state.grants }],
      );
    const res = await exec();
    if (res.status !== 'ask') {
      note('tool', `${call.summary}${outcomeSuffix(res)}`);
      return { kind: 'done', result: res };
    }

    const id = `ap-${++approvalSeq}`;
    const requested = new Date();
    state.pendingApprovals.push({
      id,
      toolUseId: call.id,
      tool: call.name,
      summary: res.summary,
      segments: res.segments,
      rule: res.rule,
      reason: res.reason,
      grantKey: res.grantKey,
      hash: res.hash,
      requestedAt: requested.toISOString(),
      expiresAt: new Date(requested.getTime() + input.approvalTimeoutMs).toISOString(),
    });
    phase('awaiting_approval', `${id}: ${res.summary}`);
    const answered = await condition(() => decisions.has(id), input.approvalTimeoutMs);
    const pending = findApproval(state, id)!;
    state.pendingApprovals = state.pendingApprovals.filter((a) => a.id !== id);
    if (!answered) {
      expired.add(id);
      note('approval', `${id} timed out after ${input.approvalTimeoutMs} ms`);
      await audit({ kind: 'approval', id, decision: 'timeout', what: pending.summary, by: 'kiln' });
      return { kind: 'approval_timeout', approvalId: id };
    }
    const d = decisions.get(id)!;
    const by = d.by ?? 'unknown';
    note('approval', `${id} ${d.approve ? 'approved' : 'rejected'} by ${by}${d.scope === 'run' ? ' for the rest of the run' : ''}`);
    await audit({
      kind: 'approval',
      id,
      decision: d.approve ? 'approved' : 'rejected',
      scope: d.scope ?? 'once',
      what: pending.summary,
      hash: pending.hash,
      by,
      note: d.note ?? d.reason,
    });
    phase('editing');
    if (!d.approve) {
      const why = d.reason?.trim() || 'no reason given';
      const rejected = await acts.recordToolResult({
        ...ref(),
        toolUseId: call.id,
        content: `A person (${by}) rejected this call: ${why}. Do not retry it as is; find another way or explain.`,
        isError: true,
      });
      return { kind: 'done', result: rejected };
    }
    if (d.scope === 'run' && pending.grantKey && !state.grants.includes(pending.grantKey)) {
      state.grants.push(pending.grantKey);
    }
    const result = await exec(pending.hash);
    note('tool', `${call.summary}${outcomeSuffix(result)}`);
    return { kind: 'done', result };
  }
}

/** " → exit code 1", " — denied (rule)", " — failed": what a person scanning the live log needs. */
function outcomeSuffix(res: RunToolResult): string {
  if (res.status === 'denied') return ` — denied (${res.rule})`;
  if (res.status !== 'done') return '';
  const command = / → ([^:]+)/.exec(res.summary)?.[1];
  if (command) return ` → ${command}`;
  if (res.recovered) return ' (already applied before a restart)';
  return res.ok ? '' : ` — failed: ${res.summary.split(': ').slice(1).join(': ').slice(0, 120)}`;
}

/** A verdict no retry can fix goes to a person with what to do about it. */
function stopForCause(v: Verdict): { next: 'needs_human'; reason: string } {
  if (v.cause === 'no_checks') return { next: 'needs_human', reason: 'no checks: say how to verify, or accept' };
  return { next: 'needs_human', reason: `infrastructure: the checks could not run, which no retry of the model can fix:\n${v.summary}` };
}

/** A stuck attempt counts like a failed verification, with a signature of its own kind. */
function stuckVerdict(why: string): Verdict {
  const kind = why.replace(/[\d]+/g, 'N').replace(/:.*$/, '');
  return { pass: false, checks: [], outOfScope: [], protectedChanged: [], changedFiles: [], signature: `stuck:${kind}`, summary: `stuck: ${why}` };
}

function failureReason(err: ActivityFailure): string {
  const cause = err.cause;
  const what = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
  return `${err.activityType ?? 'activity'} failed: ${what}${cause?.message ?? err.message}`.slice(0, 1000);
}

function retryPrompt(attempt: number, max: number, summary: string): string {
  return [
    `Verification failed. This is attempt ${attempt} of ${max}.`,
    `Failures:\n${summary}`,
    'Before you edit anything, call reflect with: attempt, last_failure, last_cause, this_fix, rationale, changed_files.',
    'Then fix the cause, run the checks, and call finish.',
  ].join('\n\n');
}

/** No worker took a host activity in time: the worktree's machine is gone. */
function isHostLost(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';
}

/** Activity options from the run's settings; Temporal owns every retry. */
function options(input: RunInput, startToCloseTimeout: string | number, maximumAttempts: number) {
  return {
    startToCloseTimeout,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: { maximumAttempts, nonRetryableErrorTypes: NON_RETRYABLE },
  };
}

/** On the worktree's host queue, waiting longer than this for a worker means the host is gone. */
const onHost = <T extends object>(input: RunInput, o: T) => ({ ...o, scheduleToStartTimeout: input.hostLossTimeoutMs ?? DEFAULT_HOST_LOSS_MS });

const sharedOptions = (input: RunInput) => options(input, '30 minutes', 3);
const hostOptions = (input: RunInput) => onHost(input, options(input, '30 minutes', 5));
const toolOptions = (input: RunInput) => onHost(input, options(input, input.commandTimeoutMs + 60_000, 5));

/** Model turns: the SDK's retries are off; retry-after comes back as the failure's nextRetryDelay. */
function modelOptions(input: RunInput) {
  const o = onHost(input, options(input, '10 minutes', 8));
  return { ...o, retry: { ...o.retry, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } };
}
