/**
 * What an attempt's turn loop carries from one turn to the next: the stop gate, the reflection a
 * retry owes, the stuck detector and whether the next turn takes a checkpoint. It is part of the
 * continue-as-new carry, so its shape is in recorded histories: add only optional fields.
 */
import { freshStuck, type StuckState } from './stuck.js';

export interface LoopState {
  editedSinceChecks: boolean;
  checksSinceEdit: string[];
  /** files edited since the checks last ran, for the stop gate's answer (absent in older carries) */
  editedFiles?: string[];
  /** a retry must start with a valid reflection before any edit */
  needReflection: boolean;
  reflectionBounces: number;
  stuck: StuckState;
  /** files may have changed since the last checkpoint */
  dirty: boolean;
  userText?: string;
  toolResults: Record<string, { content: string; isError: boolean }>;
}

export function freshLoop(needReflection: boolean, userText?: string): LoopState {
  return { editedSinceChecks: false, checksSinceEdit: [], needReflection, reflectionBounces: 0, stuck: freshStuck(), dirty: false, userText, toolResults: {} };
}

/** The part of a call's finished result the loop reads (a runTool result with status done). */
export interface DoneCall {
  effect: string;
  path?: string;
  changedPaths?: string[];
  checkRan?: string;
  checksRan?: string[];
}

/** What a finished call changed: whether the next turn takes a checkpoint, and the files it touched. */
export function effectsOf(res: DoneCall): { dirty: boolean; touched: string[] } {
  const edited = res.effect === 'edit' && res.path ? [res.path] : [];
  // sed -i, a formatter, a generator: a command's changes are edits too
  return { dirty: res.effect === 'edit' || res.effect === 'command', touched: [...edited, ...(res.changedPaths ?? [])] };
}

/** A finished call as the stop gate and the reflection rule count it; returns the files it touched. */
export function recordDone(loop: LoopState, res: DoneCall, checks: readonly string[]): string[] {
  const { dirty, touched } = effectsOf(res);
  if (dirty) loop.dirty = true;
  if (res.effect === 'edit' && res.path) loop.editedFiles = [...new Set([...(loop.editedFiles ?? []), res.path])];
  if (touched.length) {
    loop.editedSinceChecks = true;
    loop.checksSinceEdit = [];
  }
  if (res.effect === 'reflect') loop.needReflection = false;
  // a command counts for every check it ran (`a && b`); older results name one at most
  const ran = res.checksRan ? res.checksRan : res.checkRan ? [res.checkRan] : [];
  for (const c of ran) if (!loop.checksSinceEdit.includes(c)) loop.checksSinceEdit.push(c);
  if (ran.length && loop.editedFiles && checks.every((c) => loop.checksSinceEdit.includes(c))) loop.editedFiles = [];
  return touched;
}

/** The stop gate: after an edit, finish waits until every check has run again. */
export function gateSatisfied(loop: LoopState, checks: readonly string[]): boolean {
  return !loop.editedSinceChecks || checks.every((c) => loop.checksSinceEdit.includes(c));
}

/** The checks the stop gate still waits for, quoted for the model. */
export function missingChecks(loop: LoopState, checks: readonly string[]): string[] {
  return checks.filter((c) => !loop.checksSinceEdit.includes(c)).map((c) => `\`${c}\``);
}
