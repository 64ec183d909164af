/**
 * What a tool call leaves behind: its result file (read again on a retry, so an effect happens
 * once), its line in events.jsonl, and the bounded view that enters workflow history.
 */
import { join } from 'node:path';
import { COMMAND_TOOLS, capText, type PreparedEdit } from '../tools/index.js';
import type { PolicyDecision } from '../policy/types.js';
import { redact } from '../redact/index.js';
import type { RunToolResult, ToolEffect } from '../shared/contracts.js';
import { appendEvent, readJsonKept, runDir, stateDir, writeJsonKept, writeTextAtomic, type RunRecord } from '../store/run-files.js';
import type { ToolDeps } from './deps.js';
import { isDiskFull } from './disk.js';
import { MAX_CHANGED_PATHS } from './snapshot.js';

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

export interface Started {
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

export function startedPath(repo: string, runId: string, id: string): string {
  return join(stateDir(repo, runId), 'journal', `${id}.started.json`);
}

export async function finishResult(
  deps: ToolDeps,
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
    deps,
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

export async function record(
  deps: ToolDeps,
  rec: RunRecord,
  call: StoredCall,
  result: { content: string; isError: boolean },
  fullView: RunToolResult,
  decisionArg?: PolicyDecision,
): Promise<RunToolResult> {
  const { repo, runId } = rec.input;
  const view = boundView(fullView);
  const decision = decisionArg ?? deps.decided.get(call.id);
  deps.decided.delete(call.id);
  const stored: StoredResult = { content: redact(result.content), isError: result.isError, view };
  const file = resultPath(repo, runId, call.id);
  try {
    // kept: the next turn reads it to answer the call, in this process as a rule
    await writeJsonKept(file, stored, { pretty: true });
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
  return unsavedResults.get(file) ?? (await readJsonKept<StoredResult>(file));
}

function firstLines(text: string): string {
  return text.split('\n').slice(0, 4).join(' ⏎ ').slice(0, 400);
}
