/*
 * How the policy judges each tool's input. Each tool's spec (tools/registry.ts) names its
 * judge; evaluate.ts finds it there. Judges see the raw input the model sent, not the parsed
 * one: policy must hold even for input the schema would reject.
 */
import { readFile } from 'node:fs/promises';
import { canonicalJson, sha256 } from './canonical.js';
import { judgeCommand } from './commands.js';
import { judgeRead, judgeWrite } from './files.js';
import { globTargetsSensitive } from './globs.js';
import { lifecycleScriptChange } from './lifecycle.js';
import { resolveWorkspacePath } from './paths.js';
import type { CommandSegment, PolicyContext, PolicyDecision } from './types.js';
import { allow, ask, deny, type Verdict } from './verdict.js';

export type ToolInput = Record<string, unknown>;

export interface Judgement {
  verdict: Verdict;
  extra?: Pick<PolicyDecision, 'hash' | 'segments' | 'safeToRepeat'>;
}

/** A tool's policy: allow, deny or ask for one call, from its raw input. Never throws for bad input. */
export type ToolJudge = (input: ToolInput, ctx: PolicyContext) => Judgement | Promise<Judgement>;

/** The approval binding of a command: what runs (argv, wrappers, redirects), not how it was spaced. */
function commandHash(segments: readonly CommandSegment[]): string {
  return sha256(canonicalJson({ tool: 'run_command', segments: segments.map((s) => ({ argv: s.argv, via: s.via, redirects: s.redirects })) }));
}

function str(input: ToolInput, key: string): string | undefined {
  const v = input[key];
  return typeof v === 'string' ? v : undefined;
}

function need(input: ToolInput, key: string, tool: string): string | Verdict {
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

async function judgeFileWrite(tool: 'edit' | 'create_file', input: ToolInput, ctx: PolicyContext): Promise<Verdict> {
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
      after =
        before !== null && oldS && before.includes(oldS)
          ? input.replace_all === true
            ? before.split(oldS).join(newS)
            : before.replace(oldS, () => newS)
          : newS;
    }
    const changed = lifecycleScriptChange(before, after);
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

export const judgeReadFile: ToolJudge = (inp, ctx) => {
  const p = need(inp, 'path', 'read_file');
  return { verdict: typeof p === 'string' ? judgeRead(ctx, p) : p };
};

export const judgeListFiles: ToolJudge = (inp, ctx) => {
  const g = inp.glob;
  if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'list_files needs "glob" as a string.') };
  const bad = g ? judgeGlob(g, ctx, 'glob') : null;
  return { verdict: bad ?? allow('tool.list', 'Listing files in the repository only reads (sensitive files are left out).', true) };
};

export const judgeSearch: ToolJudge = (inp, ctx) => {
  const pattern = need(inp, 'pattern', 'search');
  if (typeof pattern !== 'string') return { verdict: pattern };
  const g = inp.path_glob;
  if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'search needs "path_glob" as a string.') };
  const bad = g ? judgeGlob(g, ctx, 'path_glob') : null;
  return { verdict: bad ?? allow('tool.search', 'Searching the repository only reads (results from sensitive files are filtered out).', true) };
};

export const judgeEdit: ToolJudge = async (inp, ctx) => ({ verdict: await judgeFileWrite('edit', inp, ctx) });

export const judgeCreateFile: ToolJudge = async (inp, ctx) => ({ verdict: await judgeFileWrite('create_file', inp, ctx) });

export const judgeRunCommand: ToolJudge = async (inp, ctx) => {
  const c = need(inp, 'command', 'run_command');
  if (typeof c !== 'string') return { verdict: c };
  const { verdict, segments } = await judgeCommand(c, ctx);
  return { verdict, extra: { segments, safeToRepeat: verdict.decision === 'allow' && verdict.safe === true, hash: commandHash(segments) } };
};

export const judgeUpdatePlan: ToolJudge = (inp) => {
  if (!Array.isArray(inp.steps)) return { verdict: deny('input.invalid', 'update_plan needs "steps" as an array.') };
  return { verdict: allow('tool.plan', 'Updating the plan changes nothing on disk.', true) };
};

export const judgeReflect: ToolJudge = () => ({
  verdict: allow('tool.reflect', 'A reflection is recorded in the decision log; it changes nothing on disk.', true),
});

export const judgeFinish: ToolJudge = (inp) => {
  if (typeof inp.summary !== 'string') return { verdict: deny('input.invalid', 'finish needs "summary" as a string.') };
  return { verdict: allow('tool.finish', 'Finishing is judged by the stop gate and the verifier, not by policy.', true) };
};
