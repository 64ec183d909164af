/**
 * runTool: one policy-checked tool call, with effects that happen once. A journal entry
 * ("started") is written before any effect, so a retry after a crash can tell an edit that
 * already landed from one that did not, and a command that may not be repeated from one that may.
 */
import { checksCovered } from '../checks/match.js';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { isDiskFull } from './disk.js';
import { openOutputLog, outputLogCap } from './output-log.js';
import { join } from 'node:path';
import { writesNothing } from '../policy/read-only.js';
import type { PolicyDecision } from '../policy/types.js';
import { applyApprovalRules, type ApprovalNeeds } from '../policy/approvals.js';
import { approvalPreview } from './approval-preview.js';
import { PRE_APPROVAL_MAX_CHARS } from '../shared/types.js';
import { redact } from '../redact/index.js';
import type { CommandOptions, CommandResult } from '../sandbox/types.js';
import {
  COMMAND_TOOLS,
  TOOL_CATALOG,
  capText,
  commitEdit,
  describeCall,
  evaluate,
  fileHash,
  parseToolInput,
  prepareEdit,
  runToolCall,
  sha256,
  type CreateFileInput,
  type EditRequest,
  type EditToolName,
  type ParsedToolInput,
  type PreparedEdit,
  type RunCommandInput,
  type ToolHost,
} from '../tools/index.js';
import type { RunRef, RunToolInput, RunToolResult, ToolEffect } from '../shared/contracts.js';
import type { ActivityDeps } from './deps.js';
import { heartbeating, stopIfCancelled } from './heartbeat.js';
import { runPolicy, sandboxSensitive } from './run-policy.js';
import { runCache } from '../checks/caches.js';
import { protectedPaths } from './protected-mounts.js';
import {
  MAX_CHANGED_PATHS,
  type Look,
  changedAtMost,
  forgetWorktreeTree,
  forgetWorktreeTreeForEdit,
  knownSnapshot,
  lookAfterEdit,
  lookAfterEditDone,
  pathsChangedBetween,
  rememberWorktreeTree,
  snapshotWorktree,
} from './snapshot.js';
import {
  appendEvent,
  appendJsonl,
  loadRun,
  readJson,
  runDir,
  stateDir,
  writeJsonAtomic,
  writeTextAtomic,
  writeWorkflowEvents,
  type RunRecord,
} from '../store/run-files.js';

/**
 * The text a pre-approval (`kiln approve RUN --pre TEXT`) must equal, byte for byte: a command
 * only, and only when it reaches the workflow whole (not cut, nothing redacted), so what the
 * person typed is exactly what runs.
 */
function preApprovable(parsed: Extract<ParsedToolInput, { ok: true }>): { exact?: string } {
  if (!COMMAND_TOOLS.has(parsed.name)) return {};
  const { command } = parsed.value as RunCommandInput;
  return command.length <= PRE_APPROVAL_MAX_CHARS && redact(command) === command ? { exact: command } : {};
}

/** What the model sees of one result; the full text goes to outputs/<id>.log. */
export const MODEL_RESULT_MAX_CHARS = 30_000;
/** What enters workflow history of one result. */
export const HISTORY_SUMMARY_MAX_CHARS = 600;

export interface StoredCall {
  id: string;
  name: string;
  input: unknown;
}

export interface StoredResult {
  content: string;
  isError: boolean;
  view: RunToolResult;
}

/** The run's look at the worktree before a command; `remembered` when it is the one kept (snapshot.ts). */
type Seen = Look & { remembered?: boolean };

interface Started {
  at: string;
  name: string;
  prepared?: Extract<PreparedEdit, { ok: true }>;
}

export function callPath(repo: string, runId: string, id: string): string {
  return join(stateDir(repo, runId), 'calls', `${id}.json`);
}
export function resultPath(repo: string, runId: string, id: string): string {
  return join(stateDir(repo, runId), 'results', `${id}.json`);
}
function startedPath(repo: string, runId: string, id: string): string {
  return join(stateDir(repo, runId), 'journal', `${id}.started.json`);
}

/** What every command of the run is run with (runCommand adds its own); the readers' kept sandbox is made for it. */
async function commandBase(
  rec: RunRecord,
  deps: ActivityDeps,
): Promise<Pick<CommandOptions, 'workspace' | 'readOnlyPaths' | 'sensitive' | 'cacheDir' | 'protectedPaths' | 'gitView'>> {
  // the run's cache copy is made at prepare time; made here only after a rebuild, a copy can take seconds
  const cacheDir = await runCache(rec.input.repo, rec.input.runId);
  const { config } = await runPolicy(rec, deps.env);
  const sensitive = sandboxSensitive(config);
  return {
    workspace: rec.worktree,
    readOnlyPaths: rec.linked,
    sensitive,
    cacheDir,
    protectedPaths: await protectedPaths(rec, config),
    ...(rec.gitView ? { gitView: rec.gitView } : {}),
  };
}

/**
 * While the model thinks: the worktree's sandbox for read-only commands is set up, so the run's
 * first reader does not wait for it (sandbox/kept-sandbox.ts). Nothing on failure: the first
 * command meets it and reports it.
 */
export function readySandbox(rec: RunRecord, deps: ActivityDeps): void {
  if (rec.input.sandbox !== 'bwrap') return;
  deps
    .sandbox('bwrap')
    .then((sandbox) => sandbox.keepReady?.(rec.worktree, async () => ({ ...(await commandBase(rec, deps)), timeoutMs: rec.input.commandTimeoutMs })))
    .catch(() => undefined);
}

export function toolActivities(deps: ActivityDeps) {
  /** the policy decision of each call in flight, so its event line names the rule that let it run */
  const decided = new Map<string, PolicyDecision>();

  /** The worktree's look now: the one after an edit if it is going or left, else a look of its own. */
  async function lookNow(rec: RunRecord, state: string): Promise<Seen> {
    await lookAfterEditDone(state);
    const known = await knownSnapshot(state);
    return known ? { ...known, remembered: true } : snapshotWorktree(rec.worktree, rec.baseCommit, state, { changed: true });
  }

  /**
   * Every failure of the call itself (a name too long, a full disk, a file that vanished) is a
   * tool result the model reads, bounded in size; never an activity retry that would fail the
   * same way five times and block the run.
   */
  async function runTool(inp: RunToolInput): Promise<RunToolResult> {
    try {
      // the whole call heartbeats (the looks at the worktree too), so load never reads as a dead worker
      return await heartbeating(() => runToolOnce(inp));
    } catch (err) {
      if (!isCallFault(err)) throw err;
      const rec = await loadRun(inp.repo, inp.runId);
      const call = (await readJson<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId)).catch(() => undefined)) ?? {
        id: inp.toolUseId,
        name: 'unknown',
        input: {},
      };
      const content = callFaultText(call.name, err);
      return record(rec, call, { content, isError: true }, { status: 'done', ok: false, effect: 'none', summary: content.slice(0, HISTORY_SUMMARY_MAX_CHARS) });
    }
  }

  async function runToolOnce(inp: RunToolInput): Promise<RunToolResult> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events).catch((err: unknown) => {
      if (!isDiskFull(err)) throw err;
    });
    const done = await readStoredResult(inp.repo, inp.runId, inp.toolUseId);
    if (done) return done.view;

    const rec = await loadRun(inp.repo, inp.runId);
    const call = await readJson<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId));
    if (!call) throw new Error(`no recorded tool call ${inp.toolUseId} in run ${inp.runId}`);
    const parsed = parseToolInput(call.name, call.input);
    if (!parsed.ok)
      return record(
        rec,
        call,
        { content: parsed.error, isError: true },
        { status: 'denied', summary: parsed.error.slice(0, 200), rule: 'tool.invalid-input', reason: parsed.error },
      );

    // a command is judged on the files this run changed, and the same look is its "before"
    const st = stateDir(rec.input.repo, rec.input.runId);
    // with no look since the edit tools wrote, the paths changed at most (a superset: stricter)
    const runsCommand = COMMAND_TOOLS.has(call.name);
    const known = runsCommand ? await knownSnapshot(st) : undefined;
    const atMost = runsCommand && !known ? await changedAtMost(st) : undefined;
    const snap: Seen | undefined = !runsCommand || atMost ? undefined : known ? { ...known, remembered: true } : await lookNow(rec, st);
    const { decision, needs } = await decide(rec, call, snap?.changed ?? atMost);
    decided.set(call.id, decision);
    const summary = describeCall(parsed);
    if (decision.decision === 'deny') {
      const text = `Denied by policy (${decision.rule}): ${decision.reason}`;
      return record(rec, call, { content: text, isError: true }, { status: 'denied', summary, rule: decision.rule, reason: decision.reason }, decision);
    }
    if (decision.decision === 'ask') {
      const granted = (decision.grantKey && inp.grants.includes(decision.grantKey)) || (inp.approvedHash !== undefined && inp.approvedHash === decision.hash);
      if (!granted) {
        return {
          status: 'ask',
          summary: redact(summary).slice(0, HISTORY_SUMMARY_MAX_CHARS),
          rule: decision.rule,
          reason: redact(decision.reason).slice(0, HISTORY_SUMMARY_MAX_CHARS),
          grantKey: decision.grantKey,
          hash: decision.hash,
          segments: decision.segments?.map((s) => ({ argv: s.argv.map(redact), text: redact(s.text), via: s.via })),
          ...(needs.approvers > 1 || needs.authenticated
            ? { needs: { approvers: needs.approvers, authenticated: needs.authenticated, ...(needs.starterCounts ? { starterCounts: true } : {}) } }
            : {}),
          ...preApprovable(parsed),
          ...withPreview(approvalPreview(rec.worktree, parsed)),
        };
      }
    }
    return execute(rec, call, parsed, decision, summary, snap);
  }

  /** A result the workflow decided (a person's rejection), stored like any other. */
  async function recordToolResult(inp: {
    runId: string;
    repo: string;
    toolUseId: string;
    content: string;
    isError: boolean;
    events?: RunToolInput['events'];
  }): Promise<RunToolResult> {
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    const done = await readStoredResult(inp.repo, inp.runId, inp.toolUseId);
    if (done) return done.view;
    const rec = await loadRun(inp.repo, inp.runId);
    const call = (await readJson<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId))) ?? { id: inp.toolUseId, name: 'unknown', input: {} };
    return record(
      rec,
      call,
      { content: inp.content, isError: inp.isError },
      { status: 'done', ok: !inp.isError, effect: 'none', summary: inp.content.slice(0, HISTORY_SUMMARY_MAX_CHARS) },
    );
  }

  /** `changed`: the files this run changed, for a command (one that runs a file this run wrote asks, showing it) */
  async function decide(rec: RunRecord, call: StoredCall, changed: string[] | undefined): Promise<{ decision: PolicyDecision; needs: ApprovalNeeds }> {
    const { config, mode } = await runPolicy(rec, deps.env);
    const decision = await evaluate(call.name, call.input, {
      workspace: rec.worktree,
      config,
      ...(rec.input.protect?.length ? { protect: rec.input.protect } : {}),
      mode,
      checks: rec.checks,
      allowProtectedWrites: rec.input.allowTestEdits,
      ...(changed ? { changedFiles: changed } : {}),
    });
    // policies recorded before the approvals section have none
    return applyApprovalRules({ ...config, approvals: config.approvals ?? { authenticated: false, twoPerson: [], setup: [] } }, call.name, decision);
  }

  /** Runs an allowed call through its spec; the host gives it this run's files, journal and sandbox. */
  async function execute(
    rec: RunRecord,
    call: StoredCall,
    parsed: Extract<ParsedToolInput, { ok: true }>,
    decision: PolicyDecision,
    summary: string,
    seenBefore: Seen | undefined,
  ): Promise<RunToolResult> {
    const { repo, runId } = rec.input;
    const effect = TOOL_CATALOG[parsed.name].effect;
    const host: ToolHost = {
      workspace: rec.worktree,
      result: (out) => finishResult(rec, call, out.content, !out.ok, effect, summary, out.fullOutput),
      record: (content, view) =>
        record(rec, call, { content, isError: false }, { status: 'done', ok: true, effect, summary: view.summary, ...(view.plan ? { plan: view.plan } : {}) }),
      edit: (tool, value) => editOnce(rec, call, tool, value, summary),
      command: (command, timeoutMs) => runCommand(rec, call, command, timeoutMs, decision, summary, seenBefore),
      logDecision: (entry) => appendJsonl(join(runDir(repo, runId), 'decisions.jsonl'), { at: new Date().toISOString(), ...entry }),
    };
    return runToolCall(host, parsed);
  }

  async function editOnce(rec: RunRecord, call: StoredCall, tool: EditToolName, value: EditRequest | CreateFileInput, summary: string): Promise<RunToolResult> {
    const { repo, runId } = rec.input;
    const ws = rec.worktree;
    const sp = startedPath(repo, runId, call.id);
    const started = await readJson<Started>(sp);
    let prepared = started?.prepared;
    let recovered = false;
    if (prepared) {
      recovered = (await fileHash(ws, prepared.path)) === sha256(prepared.after);
    } else {
      const p = prepareEdit(ws, tool, value);
      if (!p.ok) return finishResult(rec, call, p.error, true, 'edit', summary);
      prepared = p;
      // the worktree is about to change outside a command: the next checkpoint must look again
      await forgetWorktreeTreeForEdit(stateDir(repo, runId), p.path);
      await writeJsonAtomic(sp, { at: new Date().toISOString(), name: call.name, prepared } satisfies Started);
    }
    const out = await commitEdit(ws, prepared);
    // the next command's or checkpoint's look, started now beside what comes next
    lookAfterEdit(ws, rec.baseCommit, stateDir(repo, runId));
    deps.crash('after-edit-write');
    return finishResult(rec, call, out.content, !out.ok, 'edit', summary, undefined, prepared.path, recovered);
  }

  async function runCommand(
    rec: RunRecord,
    call: StoredCall,
    command: string,
    timeoutMs: number | undefined,
    decision: PolicyDecision,
    summary: string,
    seenBefore: Seen | undefined,
  ): Promise<RunToolResult> {
    const { repo, runId } = rec.input;
    const sp = startedPath(repo, runId, call.id);
    const isCheck = rec.checks.includes(command.trim());
    if (await readJson<Started>(sp)) {
      if (!(decision.safeToRepeat || isCheck)) {
        const text =
          'The outcome of this command is unknown: the worker running it stopped before it finished. ' +
          'It was not run again because running it twice may not be safe. Check the workspace (git status, read the files) before going on.';
        return finishResult(rec, call, text, true, 'command', summary);
      }
    }
    let sandbox;
    try {
      sandbox = await deps.sandbox(rec.input.sandbox);
    } catch (err) {
      const text = `run_command is refused: ${(err as Error).message}`;
      return finishResult(rec, call, text, true, 'command', summary);
    }
    await writeJsonAtomic(sp, { at: new Date().toISOString(), name: call.name } satisfies Started);
    const state = stateDir(repo, runId);
    // a plain reader runs with the worktree read-only, and then the look before it is the look
    // after it: the kernel keeps it so (policy/read-only.ts)
    // after an edit with no look since, it is judged on the paths changed at most and needs no tree
    const readOnly = sandbox.kind === 'bwrap' && writesNothing(decision.segments ?? []);
    // a command that may write starts from the worktree's tree: the look after an edit, when one is going
    if (!readOnly && !seenBefore) seenBefore = await lookNow(rec, state);
    // until the look after the command, nobody may take the worktree for the tree seen last
    if (!readOnly) await forgetWorktreeTree(state);
    const before = seenBefore?.tree;
    const base = await heartbeating(() => commandBase(rec, deps));
    const limit = Math.min(timeoutMs ?? rec.input.commandTimeoutMs, rec.input.commandTimeoutMs);
    const rel = `outputs/${call.id}.log`;
    const log = await openOutputLog(join(runDir(repo, runId), rel), `the run's ${rel}`, `$ ${command}\n`, outputLogCap(deps.env));
    let crashTimer: NodeJS.Timeout | undefined;
    const res: CommandResult = await heartbeating(() => {
      const p = sandbox.run(command, {
        ...base,
        ...(readOnly ? { workspaceReadOnly: true } : {}),
        timeoutMs: limit,
        signal: Context.current().cancellationSignal,
        onOutput: (c) => log.write(c),
      });
      // the crash point fires while the command is really running
      crashTimer = setTimeout(() => deps.crash('command-running'), 500);
      return p;
    });
    clearTimeout(crashTimer);
    // the run was cancelled: the command's group is dead; say so to the workflow, which waits for it
    stopIfCancelled(`run_command: ${command.slice(0, 200)}`);
    const changed = await lookAfter(rec, res, seenBefore, before, readOnly);
    const status = res.timedOut ? `timed out after ${limit} ms (killed)` : res.exitCode === null ? `killed by ${res.signal}` : `exit code ${res.exitCode}`;
    const kept = await log.close(`\n[${status}]\n`);
    const body = redact(res.output);
    const note = res.truncated ? `\n[output was ${res.outputBytes} bytes; the middle was cut here; ${kept.note}]` : '';
    const sandboxNote = res.sandboxed ? '' : '\n[sandbox OFF: this command ran unsandboxed]';
    const changedNote = changed.length
      ? `\n[this command changed ${changed.length} file(s): ${changed.slice(0, 20).join(', ')}${changed.length > 20 ? ', …' : ''}]`
      : '';
    const text = `$ ${command}\n${status}${sandboxNote}\n${body}${note}${changedNote}`;
    const ok = res.exitCode === 0 && !res.timedOut;
    const ranChecks = res.timedOut ? [] : await checksCovered(command, rec.checks, ok);
    return finishResult(
      rec,
      call,
      text,
      !ok,
      'command',
      `${summary} → ${status}`,
      undefined,
      undefined,
      false,
      isCheck && !res.timedOut ? command.trim() : undefined,
      changed,
      ranChecks,
      kept.note,
    );
  }

  /**
   * What the command changed in the worktree, and the run's look at it kept for the next command.
   * Edits made by commands (sed -i, a formatter, a code generator) count like the edit tool's; the
   * look sets git up afresh (the command may have changed the repository's config, its drivers),
   * and keeps what the worktree changes against the base: the next command's policy needs no git.
   */
  async function lookAfter(
    rec: RunRecord,
    res: CommandResult,
    seenBefore: Seen | undefined,
    before: string | undefined,
    askedReadOnly: boolean,
  ): Promise<string[]> {
    const state = stateDir(rec.input.repo, rec.input.runId);
    if (res.workspaceReadOnly) {
      // nothing could be written: what was seen before is the worktree still (or, with no look
      // since the edits, the paths changed at most are still those, and the look after the edit
      // is still the worktree's)
      if (seenBefore && !seenBefore.remembered) await rememberWorktreeTree(state, seenBefore.tree, seenBefore.changed);
      return [];
    }
    // asked read-only and not held so: the tree seen last is no longer to be trusted
    if (askedReadOnly) await forgetWorktreeTree(state);
    const { tree: after, changed: afterChanged } = await snapshotWorktree(rec.worktree, rec.baseCommit, state, { changed: true, seen: seenBefore });
    await rememberWorktreeTree(state, after, afterChanged);
    // no tree before it (asked read-only, not held so): every path it changes against the base
    return before === undefined ? (afterChanged ?? []) : pathsChangedBetween(rec.worktree, before, after);
  }

  async function finishResult(
    rec: RunRecord,
    call: StoredCall,
    content: string,
    isError: boolean,
    effect: ToolEffect,
    summary: string,
    fullOutput?: string,
    path?: string,
    recovered?: boolean,
    checkRan?: string,
    changedPaths?: string[],
    checksRan?: string[],
    /** the output log was streamed already; this says what it kept */
    logNote?: string,
  ): Promise<RunToolResult> {
    const clean = redact(content);
    const capped = capText(clean, MODEL_RESULT_MAX_CHARS);
    if (!logNote && (capped.cut > 0 || fullOutput)) {
      await writeTextAtomic(join(runDir(rec.input.repo, rec.input.runId), 'outputs', `${call.id}.log`), redact(fullOutput ?? content));
    }
    const modelText =
      capped.cut > 0 ? `${capped.text}\n[${capped.cut} characters cut; ${logNote ?? `the full output is in the run's outputs/${call.id}.log`}]` : capped.text;
    const observation = `${redact(summary)}: ${firstLines(clean)}`.slice(0, HISTORY_SUMMARY_MAX_CHARS);
    return record(
      rec,
      call,
      { content: modelText, isError },
      {
        status: 'done',
        ok: !isError,
        effect: isError && effect === 'edit' ? 'none' : effect,
        summary: observation,
        path,
        recovered: recovered || undefined,
        checkRan,
        ...(changedPaths?.length ? { changedPaths: changedPaths.slice(0, MAX_CHANGED_PATHS) } : {}),
        checksRan: checksRan?.length ? checksRan : undefined,
      },
    );
  }

  async function record(
    rec: RunRecord,
    call: StoredCall,
    result: { content: string; isError: boolean },
    fullView: RunToolResult,
    decisionArg?: PolicyDecision,
  ): Promise<RunToolResult> {
    const { repo, runId } = rec.input;
    const view = boundView(fullView);
    const decision = decisionArg ?? decided.get(call.id);
    decided.delete(call.id);
    const stored: StoredResult = { content: redact(result.content), isError: result.isError, view };
    const file = resultPath(repo, runId, call.id);
    try {
      await writeJsonAtomic(file, stored);
      unsavedResults.delete(file);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      // the model must still get this result: kept in memory until the disk has room
      unsavedResults.set(file, stored);
      return view;
    }
    const reason = COMMAND_TOOLS.has(call.name) ? (call.input as { reason?: unknown } | null)?.reason : undefined;
    await appendEvent(repo, runId, {
      type: 'tool',
      id: call.id,
      tool: call.name,
      ...(typeof reason === 'string' ? { reason } : {}),
      status: view.status,
      ok: view.status === 'done' ? view.ok : false,
      summary: view.summary,
      ...(decision ? { rule: decision.rule, decision: decision.decision, reason: decision.reason } : {}),
    }).catch((err: unknown) => {
      // the event line is the record's copy; the result above is what the run needs
      if (!isDiskFull(err)) throw err;
    });
    return view;
  }

  /**
   * Several read-only calls of one turn in one activity: each is still policy-checked and
   * journaled on its own; only the round trips through the server are saved.
   */
  async function runTools(inp: RunRef & { toolUseIds: string[]; grants: string[] }): Promise<Array<{ id: string; result: RunToolResult }>> {
    const out: Array<{ id: string; result: RunToolResult }> = [];
    for (const [i, id] of inp.toolUseIds.entries()) {
      const result = await runTool({ runId: inp.runId, repo: inp.repo, toolUseId: id, grants: inp.grants, events: i === 0 ? inp.events : undefined });
      out.push({ id, result });
      if (result.status === 'ask') break;
    }
    return out;
  }

  return { runTool, runTools, recordToolResult };
}

/** What enters workflow history is bounded whatever the call held (a 5 MB path made a 5 MB failure). */
function boundView(view: RunToolResult): RunToolResult {
  const out = { ...view, summary: view.summary.slice(0, HISTORY_SUMMARY_MAX_CHARS) };
  if ('reason' in out && typeof out.reason === 'string') out.reason = out.reason.slice(0, HISTORY_SUMMARY_MAX_CHARS);
  if ('path' in out && typeof out.path === 'string') out.path = out.path.slice(0, HISTORY_SUMMARY_MAX_CHARS);
  return out;
}

/** Results that could not be written (a full disk), by file; the next model turn on this worker reads them. */
const unsavedResults = new Map<string, StoredResult>();

/** A call's stored result, from disk or from memory when the disk was full. */
export async function readStoredResult(repo: string, runId: string, id: string): Promise<StoredResult | undefined> {
  const file = resultPath(repo, runId, id);
  return unsavedResults.get(file) ?? (await readJson<StoredResult>(file));
}

/** A failure of the call's own work: an errno from the file system, or a full disk anywhere. */
function isCallFault(err: unknown): boolean {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return false;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return (typeof code === 'string' && /^E[A-Z]+$/.test(code)) || isDiskFull(err);
}

/** What the model reads about a failed call: bounded, since the error may quote a 5 MB input. */
export const CALL_FAULT_MAX_CHARS = 1000;

function callFaultText(tool: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const what = redact(String((err as Error)?.message ?? err)).slice(0, CALL_FAULT_MAX_CHARS);
  if (isDiskFull(err))
    return `${tool.slice(0, 40)} could not complete: the worker's disk is full (${code ?? 'ENOSPC'}). Nothing more was written for this call. Do not repeat it at once; calls that only read still work, and the run goes on once space is freed.`;
  if (code === 'ENAMETOOLONG')
    return `${tool.slice(0, 40)} failed: a path in the call is too long for the file system (ENAMETOOLONG). Use a shorter, real path.`;
  return `${tool.slice(0, 40)} failed: ${what}`;
}

function firstLines(text: string): string {
  return text.split('\n').slice(0, 4).join(' ⏎ ').slice(0, 400);
}

/** An absent preview leaves no key: results recorded before previews look the same. */
function withPreview(preview: string | undefined): { preview?: string } {
  return preview === undefined ? {} : { preview };
}
