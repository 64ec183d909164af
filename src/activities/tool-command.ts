/**
 * run_command's side of runTool: the sandbox it runs in, the journal lines that keep a command
 * that may not be repeated from running twice (started) and let a retry report one that ended
 * (finished), and the looks at the worktree before and after.
 */
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { checksCovered } from '../checks/match.js';
import { runCache } from '../checks/caches.js';
import { writesNothing } from '../policy/read-only.js';
import type { PolicyDecision } from '../policy/types.js';
import { redact } from '../redact/index.js';
import type { CommandOptions, CommandResult } from '../sandbox/types.js';
import type { RunToolResult } from '../shared/contracts.js';
import { ahead } from '../shared/ahead.js';
import { runDir, stateDir, writeJsonAtomic, writeJsonDurable, readJson, type RunRecord } from '../store/run-files.js';
import type { ActivityDeps, ToolDeps } from './deps.js';
import { heartbeating, stopIfCancelled } from './heartbeat.js';
import { openOutputLog, outputLogCap } from './output-log.js';
import { protectedPaths } from './protected-mounts.js';
import { runPolicy, sandboxSensitive } from './run-policy.js';
import { type Look, forgetWorktreeTree, knownSnapshot, lookAfterEditDone, pathsChangedBetween, rememberWorktreeTree, snapshotWorktree } from './snapshot.js';
import { finishResult, startedPath, type Started, type StoredCall } from './tool-results.js';

/** The run's look at the worktree before a command; `remembered` when it is the one kept (snapshot.ts). */
export type Seen = Look & { remembered?: boolean };

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

/** The worktree's look now: the one after an edit if it is going or left, else a look of its own. */
export async function lookNow(rec: RunRecord, state: string): Promise<Seen> {
  await lookAfterEditDone(state);
  const known = await knownSnapshot(state);
  return known ? { ...known, remembered: true } : snapshotWorktree(rec.worktree, rec.baseCommit, state, { changed: true });
}

/**
 * A command's completion, journaled as soon as it ended and its log was closed: a retry after
 * the worker died reports this outcome to the model instead of running it again.
 */
export interface Finished {
  command: string;
  /** the output redacted; the rest of the sandbox's result as it was */
  res: CommandResult;
  limit: number;
  logNote: string;
  /** the worktree's tree before it, when one was seen; what it changed is measured from it */
  before?: string;
  readOnly: boolean;
  decision: PolicyDecision;
}

function finishedPath(repo: string, runId: string, id: string): string {
  return join(stateDir(repo, runId), 'journal', `${id}.finished.json`);
}

/** The completion journaled for a command call, if it ended before its worker died. */
export function readFinished(repo: string, runId: string, id: string): Promise<Finished | undefined> {
  return readJson<Finished>(finishedPath(repo, runId, id));
}

/** A command call whose completion was journaled before its worker died: its result, from the journal (readFinished). */
export async function reportJournaledCommand(
  deps: ToolDeps,
  rec: RunRecord,
  call: StoredCall,
  summary: string,
  done: Finished | undefined,
): Promise<RunToolResult | undefined> {
  if (!done) return undefined;
  deps.decided.set(call.id, done.decision);
  return reportCommand(deps, rec, call, summary, done, undefined);
}

export async function runCommand(
  deps: ToolDeps,
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
  // read beside the mark below: what the command runs with moves nothing on disk
  const baseRead = ahead(heartbeating(() => commandBase(rec, deps)));
  if (await readJson<Started>(sp)) {
    if (!(decision.safeToRepeat || isCheck)) {
      const text =
        'The outcome of this command is unknown: the worker running it stopped before it finished. ' +
        'It was not run again because running it twice may not be safe. Check the workspace (git status, read the files) before going on.';
      return finishResult(deps, rec, call, text, true, 'command', summary);
    }
  }
  let sandbox;
  try {
    sandbox = await deps.sandbox(rec.input.sandbox);
  } catch (err) {
    const text = `run_command is refused: ${(err as Error).message}`;
    return finishResult(deps, rec, call, text, true, 'command', summary);
  }
  // what stops a second run (this mark, and the completion below) must outlast the machine; a
  // command safe to repeat is run again instead, and its lines are spared the disk flush
  const journal = decision.safeToRepeat || isCheck ? writeJsonAtomic : writeJsonDurable;
  await journal(sp, { at: new Date().toISOString(), name: call.name } satisfies Started);
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
  const base = await baseRead;
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
  const kept = await log.close(`\n[${commandStatus(res, limit)}]\n`);
  const done: Finished = { command, res: { ...res, output: redact(res.output) }, limit, logNote: kept.note, readOnly, decision, ...(before ? { before } : {}) };
  await journal(finishedPath(repo, runId, call.id), done);
  deps.crash('command-finished');
  return reportCommand(deps, rec, call, summary, done, seenBefore);
}

function commandStatus(res: CommandResult, limit: number): string {
  return res.timedOut ? `timed out after ${limit} ms (killed)` : res.exitCode === null ? `killed by ${res.signal}` : `exit code ${res.exitCode}`;
}

/** The model's result of a finished command: what it printed, how it ended, what it changed. */
async function reportCommand(
  deps: ToolDeps,
  rec: RunRecord,
  call: StoredCall,
  summary: string,
  done: Finished,
  seenBefore: Seen | undefined,
): Promise<RunToolResult> {
  const { command, res, limit } = done;
  const isCheck = rec.checks.includes(command.trim());
  const changed = await lookAfter(rec, res, seenBefore, done.before, done.readOnly);
  const status = commandStatus(res, limit);
  const note = res.truncated ? `\n[output was ${res.outputBytes} bytes; the middle was cut here; ${done.logNote}]` : '';
  const sandboxNote = res.sandboxed ? '' : '\n[sandbox OFF: this command ran unsandboxed]';
  const changedNote = changed.length
    ? `\n[this command changed ${changed.length} file(s): ${changed.slice(0, 20).join(', ')}${changed.length > 20 ? ', …' : ''}]`
    : '';
  const text = `$ ${command}\n${status}${sandboxNote}\n${res.output}${note}${changedNote}`;
  const ok = res.exitCode === 0 && !res.timedOut;
  const ranChecks = res.timedOut ? [] : await checksCovered(command, rec.checks, ok);
  return finishResult(
    deps,
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
    done.logNote,
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
