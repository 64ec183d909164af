/*
 * The tools by name, with the facts about each that workflow code may act on. This module is
 * bundled into the deterministic workflow sandbox: it must stay free of Node, zod and I/O.
 * Everything else about a tool (schema and prompt text, policy judgement, how it runs, its
 * summary) is its spec, in the tool's own file (read-file.ts for read_file, ...); registry.ts
 * lists them, and the compiler requires a spec for every name listed here.
 *
 * Code that treats a tool differently asks for its flag (or one of the sets below), never for its name.
 */
import type { ToolEffect } from '../shared/contracts.js';

export interface ToolFlags {
  /** only looks: a turn's leading run of such calls is batched into one activity, and does not end planning */
  readonly readOnly: boolean;
  /** may run again after a crash in the middle of it; 'judged': the policy decides per call (a command) */
  readonly safeToRepeat: boolean | 'judged';
  /** what a successful call changes; the workflow's bookkeeping (touched files, reflection gate) keys off it */
  readonly effect: ToolEffect;
  /** the call ends the attempt: the workflow takes it (verification, or the stop gate) instead of running it */
  readonly endsAttempt: boolean;
}

/** In the order the model is shown them: the order is part of every request (prompt cache). */
export const TOOL_CATALOG = {
  read_file: { readOnly: true, safeToRepeat: true, effect: 'read', endsAttempt: false },
  list_files: { readOnly: true, safeToRepeat: true, effect: 'read', endsAttempt: false },
  search: { readOnly: true, safeToRepeat: true, effect: 'read', endsAttempt: false },
  edit: { readOnly: false, safeToRepeat: false, effect: 'edit', endsAttempt: false },
  create_file: { readOnly: false, safeToRepeat: false, effect: 'edit', endsAttempt: false },
  run_command: { readOnly: false, safeToRepeat: 'judged', effect: 'command', endsAttempt: false },
  update_plan: { readOnly: true, safeToRepeat: true, effect: 'plan', endsAttempt: false },
  // a repeat appends the same reflection to the decision log twice; nothing else
  reflect: { readOnly: false, safeToRepeat: true, effect: 'reflect', endsAttempt: false },
  finish: { readOnly: false, safeToRepeat: true, effect: 'none', endsAttempt: true },
} as const satisfies Record<string, ToolFlags>;

export type ToolName = keyof typeof TOOL_CATALOG;

export const TOOL_NAMES = Object.keys(TOOL_CATALOG) as readonly ToolName[];

/** Own names only: a model that calls "constructor" or "__proto__" names no tool. */
export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOL_CATALOG, name);
}

function namesWhere(test: (f: ToolFlags) => boolean): ReadonlySet<string> {
  return new Set(TOOL_NAMES.filter((n) => test(TOOL_CATALOG[n])));
}

/** Tools that only look (read_file, list_files, search, update_plan). */
export const READ_ONLY_TOOLS = namesWhere((f) => f.readOnly);
/** Tools that change files of the worktree (edit, create_file): a retry's reflection comes first. */
export const EDIT_TOOLS = namesWhere((f) => f.effect === 'edit');
/**
 * Tools that run a shell command (run_command): their input carries `command` and `reason`; a call
 * is judged and approved by what it runs, may take the whole command timeout, and is pre-approvable.
 */
export const COMMAND_TOOLS = namesWhere((f) => f.effect === 'command');
/** Tools that give the reflection a retry owes before anything else (reflect): the only call allowed ahead of it. */
export const REFLECTION_TOOLS = namesWhere((f) => f.effect === 'reflect');
/** Tools whose call ends the attempt (finish): never run ahead, the workflow's stop gate answers them. */
export const ATTEMPT_ENDING_TOOLS = namesWhere((f) => f.endsAttempt);
