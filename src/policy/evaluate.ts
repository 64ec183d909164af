import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { judgeCommand } from './commands.js';
import { judgeRead, judgeWrite } from './files.js';
import { globTargetsSensitive } from './globs.js';
import { lifecycleScriptChange } from './lifecycle.js';
import { resolveWorkspacePath } from './paths.js';
import type { CommandSegment, PolicyContext, PolicyDecision } from './types.js';
import { allow, applyMode, deny, ask, type Verdict } from './verdict.js';

/** JSON with sorted keys, so equal values hash equally whatever order they were built in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

type Input = Record<string, unknown>;

/** The approval binding of a command: what runs (argv, wrappers, redirects), not how it was spaced. */
function commandHash(segments: readonly CommandSegment[]): string {
  return sha256(canonicalJson({ tool: 'run_command', segments: segments.map((s) => ({ argv: s.argv, via: s.via, redirects: s.redirects })) }));
}

function str(input: Input, key: string): string | undefined {
  const v = input[key];
  return typeof v === 'string' ? v : undefined;
}

function need(input: Input, key: string, tool: string): string | Verdict {
  const v = input[key];
  if (typeof v !== 'string' || v.length === 0) {
    return deny('input.invalid', `${tool} needs "${key}" as a non-empty string.`);
  }
  return v;
}

/** Paths and globs given to list/search must stay in the repository and off credentials. */
function judgeGlob(glob: string, ctx: PolicyContext, what: string): Verdict | null {
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

async function judgeFileWrite(tool: 'edit' | 'create_file', input: Input, ctx: PolicyContext): Promise<Verdict> {
  const p = need(input, 'path', tool);
  if (typeof p !== 'string') return p;
  const v = judgeWrite(ctx, p, tool);
  if (v.decision !== 'allow' || v.rel === undefined) return v;
  if (/(^|\/)package\.json$/.test(v.rel)) {
    const r = resolveWorkspacePath(ctx.workspace, p);
    const before = r.ok ? await currentText(r.abs) : null;
    let after: string;
    if (tool === 'create_file') after = str(input, 'content') ?? '';
    else {
      const oldS = str(input, 'old_string') ?? '';
      const newS = str(input, 'new_string') ?? '';
      after = before !== null && oldS && before.includes(oldS) ? (input.replace_all === true ? before.split(oldS).join(newS) : before.replace(oldS, () => newS)) : newS;
    }
    const changed = lifecycleScriptChange(before, after);
    if (changed) {
      return ask('write.lifecycle-script', `The change to ${v.rel} adds or changes the "${changed}" script, which runs on npm install; a person must approve it.`, `${tool}:${v.rel}`);
    }
  }
  return v;
}

async function judgeTool(tool: string, input: unknown, ctx: PolicyContext): Promise<{ verdict: Verdict; extra?: Partial<PolicyDecision> }> {
  const known = ['read_file', 'list_files', 'search', 'edit', 'create_file', 'run_command', 'update_plan', 'reflect', 'finish'];
  if (!known.includes(tool)) return { verdict: deny('tool.unknown', `There is no tool named ${tool}; use one of ${known.join(', ')}.`) };
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    return { verdict: deny('input.invalid', `${tool} needs its input as a JSON object.`) };
  }
  const inp = input as Input;
  switch (tool) {
    case 'read_file': {
      const p = need(inp, 'path', tool);
      return { verdict: typeof p === 'string' ? judgeRead(ctx, p) : p };
    }
    case 'list_files': {
      const g = inp.glob;
      if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'list_files needs "glob" as a string.') };
      const bad = g ? judgeGlob(g, ctx, 'glob') : null;
      return { verdict: bad ?? allow('tool.list', 'Listing files in the repository only reads (sensitive files are left out).', true) };
    }
    case 'search': {
      const pattern = need(inp, 'pattern', tool);
      if (typeof pattern !== 'string') return { verdict: pattern };
      const g = inp.path_glob;
      if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'search needs "path_glob" as a string.') };
      const bad = g ? judgeGlob(g, ctx, 'path_glob') : null;
      return { verdict: bad ?? allow('tool.search', 'Searching the repository only reads (results from sensitive files are filtered out).', true) };
    }
    case 'edit':
    case 'create_file':
      return { verdict: await judgeFileWrite(tool, inp, ctx) };
    case 'run_command': {
      const c = need(inp, 'command', tool);
      if (typeof c !== 'string') return { verdict: c };
      const { verdict, segments } = await judgeCommand(c, ctx);
      return { verdict, extra: { segments, safeToRepeat: verdict.decision === 'allow' && verdict.safe === true, hash: commandHash(segments) } };
    }
    case 'update_plan':
      if (!Array.isArray(inp.steps)) return { verdict: deny('input.invalid', 'update_plan needs "steps" as an array.') };
      return { verdict: allow('tool.plan', 'Updating the plan changes nothing on disk.', true) };
    case 'reflect':
      return { verdict: allow('tool.reflect', 'A reflection is recorded in the decision log; it changes nothing on disk.', true) };
    default:
      if (typeof inp.summary !== 'string') return { verdict: deny('input.invalid', 'finish needs "summary" as a string.') };
      return { verdict: allow('tool.finish', 'Finishing is judged by the stop gate and the verifier, not by policy.', true) };
  }
}

/** Decides allow, deny or ask for one tool call. Never throws for bad input: it denies. */
export async function evaluate(tool: string, input: unknown, ctx: PolicyContext): Promise<PolicyDecision> {
  const { verdict, extra } = await judgeTool(tool, input, ctx);
  const v = applyMode(verdict, ctx);
  const decision: PolicyDecision = { decision: v.decision, rule: v.rule, reason: v.reason };
  if (v.decision === 'ask') decision.grantKey = v.grantKey ?? `${tool}:${canonicalJson(input)}`;
  decision.hash = extra?.hash ?? sha256(canonicalJson({ tool, input }));
  if (extra?.segments) decision.segments = extra.segments;
  if (tool === 'run_command') decision.safeToRepeat = extra?.safeToRepeat ?? false;
  return decision;
}
