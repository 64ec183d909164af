/**
 * runTool: one policy-checked tool call, with effects that happen once. A journal entry
 * ("started") is written before any effect, so a retry after a crash can tell an edit that
 * already landed from one that did not, and a command that may not be repeated from one that may.
 */
import { join } from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { applyApprovalRules, type ApprovalNeeds } from '../policy/approvals.js';
import type { PolicyDecision } from '../policy/types.js';
import { redact } from '../redact/index.js';
import type { RunRef, RunToolInput, RunToolResult } from '../shared/contracts.js';
import { PRE_APPROVAL_MAX_CHARS } from '../shared/types.js';
import { appendJsonl, loadRun, readJson, readJsonKept, runDir, stateDir, writeJsonAtomic, writeWorkflowEvents, type RunRecord } from '../store/run-files.js';
import {
  COMMAND_TOOLS,
  TOOL_CATALOG,
  commitEdit,
  describeCall,
  describeMcpCall,
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
  type RunCommandInput,
  type ToolHost,
} from '../tools/index.js';
import { MCP_PREFIX } from '../policy/mcp.js';
import { ahead } from '../shared/ahead.js';
import { approvalPreview, mcpArgsPreview } from './approval-preview.js';
import { knownMcpTools } from './mcp-catalog.js';
import { runMcpCall } from './tool-mcp.js';
import type { ToolDeps } from './deps.js';
import { isDiskFull } from './disk.js';
import { heartbeating } from './heartbeat.js';
import { runPolicy } from './run-policy.js';
import { changedAtMost, forgetWorktreeTreeForEdit, knownSnapshot, lookAfterEdit } from './snapshot.js';
import { lookNow, readFinished, reportJournaledCommand, runCommand, type Seen } from './tool-command.js';
import { HISTORY_SUMMARY_MAX_CHARS, callPath, finishResult, readStoredResult, record, startedPath, type Started, type StoredCall } from './tool-results.js';

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

/**
 * Every failure of the call itself (a name too long, a full disk, a file that vanished) is a
 * tool result the model reads, bounded in size; never an activity retry that would fail the
 * same way five times and block the run.
 */
export async function runTool(deps: ToolDeps, inp: RunToolInput): Promise<RunToolResult> {
  try {
    // the whole call heartbeats (the looks at the worktree too), so load never reads as a dead worker
    return await heartbeating(() => runToolOnce(deps, inp));
  } catch (err) {
    if (!isCallFault(err)) throw err;
    const rec = await loadRun(inp.repo, inp.runId);
    const call = (await readJson<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId)).catch(() => undefined)) ?? {
      id: inp.toolUseId,
      name: 'unknown',
      input: {},
    };
    const content = callFaultText(call.name, err);
    return record(
      deps,
      rec,
      call,
      { content, isError: true },
      { status: 'done', ok: false, effect: 'none', summary: content.slice(0, HISTORY_SUMMARY_MAX_CHARS) },
    );
  }
}

async function runToolOnce(deps: ToolDeps, inp: RunToolInput): Promise<RunToolResult> {
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events).catch((err: unknown) => {
    if (!isDiskFull(err)) throw err;
  });
  // the call's files are read at once, not one after another: each read is a trip through the
  // thread pool, and a fast turn is mostly such trips (docs/bench.md)
  const stored = ahead(readStoredResult(inp.repo, inp.runId, inp.toolUseId));
  const recRead = ahead(loadRun(inp.repo, inp.runId));
  const callRead = ahead(readJsonKept<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId)));
  const finishedRead = ahead(readFinished(inp.repo, inp.runId, inp.toolUseId));
  const done = await stored;
  if (done) return done.view;

  const rec = await recRead;
  const call = await callRead;
  if (!call) throw new Error(`no recorded tool call ${inp.toolUseId} in run ${inp.runId}`);
  if (call.name.startsWith(MCP_PREFIX)) return runMcpToolOnce(deps, rec, call, inp);
  const parsed = parseToolInput(call.name, call.input);
  if (!parsed.ok)
    return record(
      deps,
      rec,
      call,
      { content: parsed.error, isError: true },
      { status: 'denied', summary: parsed.error.slice(0, 200), rule: 'tool.invalid-input', reason: parsed.error },
    );

  const runsCommand = COMMAND_TOOLS.has(call.name);
  // a command that ended before its worker died is reported as it ended, not judged or run again
  const st = stateDir(rec.input.repo, rec.input.runId);
  const knownRead = runsCommand ? ahead(knownSnapshot(st)) : undefined;
  const finished = runsCommand ? await reportJournaledCommand(deps, rec, call, describeCall(parsed), await finishedRead) : undefined;
  if (finished) return finished;
  // a command is judged on the files this run changed, and the same look is its "before"
  // with no look since the edit tools wrote, the paths changed at most (a superset: stricter)
  const known = await knownRead;
  const atMost = runsCommand && !known ? await changedAtMost(st) : undefined;
  const snap: Seen | undefined = !runsCommand || atMost ? undefined : known ? { ...known, remembered: true } : await lookNow(rec, st);
  const { decision, needs } = await decide(deps, rec, call, snap?.changed ?? atMost);
  deps.decided.set(call.id, decision);
  const summary = describeCall(parsed);
  if (decision.decision === 'deny') {
    const text = `Denied by policy (${decision.rule}): ${decision.reason}`;
    return record(deps, rec, call, { content: text, isError: true }, { status: 'denied', summary, rule: decision.rule, reason: decision.reason }, decision);
  }
  if (decision.decision === 'ask' && !granted(decision, inp)) {
    return { ...askView(decision, needs, summary), ...preApprovable(parsed), ...withPreview(approvalPreview(rec.worktree, parsed)) };
  }
  return execute(deps, rec, call, parsed, decision, summary, snap);
}

function granted(decision: PolicyDecision, inp: RunToolInput): boolean {
  return Boolean((decision.grantKey && inp.grants.includes(decision.grantKey)) || (inp.approvedHash !== undefined && inp.approvedHash === decision.hash));
}

/** What the workflow needs to ask people about a call, redacted and bounded. */
function askView(decision: PolicyDecision, needs: ApprovalNeeds, summary: string): Extract<RunToolResult, { status: 'ask' }> {
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
  };
}

/**
 * A call to an MCP tool: judged against the run's discovered MCP tools, asked about with its
 * arguments shown, and run by tool-mcp.ts (the idempotency rule after a crash is there).
 */
async function runMcpToolOnce(deps: ToolDeps, rec: RunRecord, call: StoredCall, inp: RunToolInput): Promise<RunToolResult> {
  const tools = await knownMcpTools(rec);
  const summary = describeMcpCall(call.name, call.input);
  const { decision, needs } = await decide(
    deps,
    rec,
    call,
    undefined,
    tools.map((t) => t.name),
  );
  deps.decided.set(call.id, decision);
  if (decision.decision === 'deny') {
    const text = `Denied by policy (${decision.rule}): ${decision.reason}`;
    return record(deps, rec, call, { content: text, isError: true }, { status: 'denied', summary, rule: decision.rule, reason: decision.reason }, decision);
  }
  if (decision.decision === 'ask' && !granted(decision, inp)) return { ...askView(decision, needs, summary), ...withPreview(mcpArgsPreview(call.input)) };
  return runMcpCall(
    deps,
    rec,
    call,
    tools.find((t) => t.name === call.name)!,
    summary,
  );
}

/** A result the workflow decided (a person's rejection), stored like any other. */
export async function recordToolResult(
  deps: ToolDeps,
  inp: {
    runId: string;
    repo: string;
    toolUseId: string;
    content: string;
    isError: boolean;
    events?: RunToolInput['events'];
  },
): Promise<RunToolResult> {
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const done = await readStoredResult(inp.repo, inp.runId, inp.toolUseId);
  if (done) return done.view;
  const rec = await loadRun(inp.repo, inp.runId);
  const call = (await readJson<StoredCall>(callPath(inp.repo, inp.runId, inp.toolUseId))) ?? { id: inp.toolUseId, name: 'unknown', input: {} };
  return record(
    deps,
    rec,
    call,
    { content: inp.content, isError: inp.isError },
    { status: 'done', ok: !inp.isError, effect: 'none', summary: inp.content.slice(0, HISTORY_SUMMARY_MAX_CHARS) },
  );
}

/** `changed`: the files this run changed, for a command (one that runs a file this run wrote asks, showing it) */
async function decide(
  deps: ToolDeps,
  rec: RunRecord,
  call: StoredCall,
  changed: string[] | undefined,
  mcpTools?: readonly string[],
): Promise<{ decision: PolicyDecision; needs: ApprovalNeeds }> {
  const { config, mode } = await runPolicy(rec, deps.env);
  const decision = await evaluate(call.name, call.input, {
    workspace: rec.worktree,
    config,
    ...(rec.input.protect?.length ? { protect: rec.input.protect } : {}),
    mode,
    checks: rec.checks,
    allowProtectedWrites: rec.input.allowTestEdits,
    ...(changed ? { changedFiles: changed } : {}),
    ...(mcpTools ? { mcpTools } : {}),
  });
  // policies recorded before the approvals section have none
  return applyApprovalRules({ ...config, approvals: config.approvals ?? { authenticated: false, twoPerson: [], setup: [] } }, call.name, decision);
}

/** Runs an allowed call through its spec; the host gives it this run's files, journal and sandbox. */
async function execute(
  deps: ToolDeps,
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
    result: (out) => finishResult(deps, rec, call, out.content, !out.ok, effect, summary, out.fullOutput),
    record: (content, view) =>
      record(
        deps,
        rec,
        call,
        { content, isError: false },
        { status: 'done', ok: true, effect, summary: view.summary, ...(view.plan ? { plan: view.plan } : {}) },
      ),
    edit: (tool, value) => editOnce(deps, rec, call, tool, value, summary),
    command: (command, timeoutMs) => runCommand(deps, rec, call, command, timeoutMs, decision, summary, seenBefore),
    logDecision: (entry) => appendJsonl(join(runDir(repo, runId), 'decisions.jsonl'), { at: new Date().toISOString(), ...entry }),
  };
  return runToolCall(host, parsed);
}

async function editOnce(
  deps: ToolDeps,
  rec: RunRecord,
  call: StoredCall,
  tool: EditToolName,
  value: EditRequest | CreateFileInput,
  summary: string,
): Promise<RunToolResult> {
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
    if (!p.ok) return finishResult(deps, rec, call, p.error, true, 'edit', summary);
    prepared = p;
    // the worktree is about to change outside a command: the next checkpoint must look again
    await forgetWorktreeTreeForEdit(stateDir(repo, runId), p.path);
    await writeJsonAtomic(sp, { at: new Date().toISOString(), name: call.name, prepared } satisfies Started);
  }
  const out = await commitEdit(ws, prepared);
  // the next command's or checkpoint's look, started now beside what comes next
  lookAfterEdit(ws, rec.baseCommit, stateDir(repo, runId));
  deps.crash('after-edit-write');
  return finishResult(deps, rec, call, out.content, !out.ok, 'edit', summary, undefined, prepared.path, recovered);
}

/**
 * Several read-only calls of one turn in one activity: each is still policy-checked and
 * journaled on its own; only the round trips through the server are saved.
 */
export async function runTools(
  deps: ToolDeps,
  inp: RunRef & { toolUseIds: string[]; grants: string[] },
): Promise<Array<{ id: string; result: RunToolResult }>> {
  const out: Array<{ id: string; result: RunToolResult }> = [];
  for (const [i, id] of inp.toolUseIds.entries()) {
    const result = await runTool(deps, { runId: inp.runId, repo: inp.repo, toolUseId: id, grants: inp.grants, events: i === 0 ? inp.events : undefined });
    out.push({ id, result });
    if (result.status === 'ask') break;
  }
  return out;
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

/** An absent preview leaves no key: results recorded before previews look the same. */
function withPreview(preview: string | undefined): { preview?: string } {
  return preview === undefined ? {} : { preview };
}
