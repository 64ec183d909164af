/*
 * What a tool's policy judge is, and the checks judges share. Each tool owns its judge (in its
 * own file in src/tools); the policy gives the parts judges are made of. Judges see the raw input
 * the model sent, not the parsed one: policy must hold even for input the schema would reject.
 */
import { readFile } from 'node:fs/promises';
import { judgeWrite } from './files.js';
import { globTargetsSensitive } from './globs.js';
import { lifecycleScriptChange } from './lifecycle.js';
import { resolveWorkspacePath } from './paths.js';
import type { PolicyContext, PolicyDecision } from './types.js';
import { ask, deny, type Verdict } from './verdict.js';

export type ToolInput = Record<string, unknown>;

export interface Judgement {
  verdict: Verdict;
  extra?: Pick<PolicyDecision, 'hash' | 'segments' | 'safeToRepeat'>;
}

/** A tool's policy: allow, deny or ask for one call, from its raw input. Never throws for bad input. */
export type ToolJudge = (input: ToolInput, ctx: PolicyContext) => Judgement | Promise<Judgement>;

export function str(input: ToolInput, key: string): string | undefined {
  const v = input[key];
  return typeof v === 'string' ? v : undefined;
}

/** The input's `key` as a non-empty string, or the verdict that refuses the call naming `tool`. */
export function need(input: ToolInput, key: string, tool: string): string | Verdict {
  const v = input[key];
  if (typeof v !== 'string' || v.length === 0) {
    return deny('input.invalid', `${tool} needs "${key}" as a non-empty string.`);
  }
  return v;
}

/** Paths and globs given to list/search must stay in the repository and off credentials. */
export function judgeGlob(glob: string, ctx: PolicyContext, what: string): Verdict | null {
  if (glob.includes('\0')) return deny('path.invalid', `The ${what} contains a NUL byte.`);
  if (glob.startsWith('/') || glob.startsWith('~') || /(^|[\\/])\.\.([\\/]|$)/.test(glob)) {
    return deny('path.outside-workspace', `The ${what} ${glob} reaches outside the repository; use a glob relative to the repository root.`);
  }
  if (globTargetsSensitive(glob, ctx.config)) return deny('path.sensitive', `The ${what} ${glob} targets files that may hold credentials.`);
  return null;
}

async function currentText(abs: string): Promise<string | null> {
  try {
    return await readFile(abs, 'utf8');
  } catch {
    return null;
  }
}

/**
 * A tool's write of the file at input.path, judged by the path; a package.json change that adds or
 * changes an install script asks. `after` is the file's text once written, from its text now (null:
 * no such file); it is asked for only for a package.json.
 */
export async function judgeFileWrite(tool: string, input: ToolInput, ctx: PolicyContext, after: (before: string | null) => string): Promise<Verdict> {
  const p = need(input, 'path', tool);
  if (typeof p !== 'string') return p;
  const v = judgeWrite(ctx, p, tool);
  if (v.decision !== 'allow' || v.rel === undefined) return v;
  if (/(^|\/)package\.json$/.test(v.rel)) {
    const r = resolveWorkspacePath(ctx.workspace, p);
    const before = r.ok ? await currentText(r.abs) : null;
    const changed = lifecycleScriptChange(before, after(before));
    if (changed) {
      return ask(
        'write.lifecycle-script',
        `The change to ${v.rel} adds or changes the "${changed}" script, which runs on npm install; a person must approve it.`,
        `${tool}:${v.rel}`,
      );
    }
  }
  return v;
}
