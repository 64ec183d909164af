import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { KilnInputError } from '../shared/errors.js';
import { parseJsonText } from '../shared/zod-error.js';

/** A script that cannot be used: unreadable, not JSON, or not of the format in SCRIPT_FORMAT.md. */
export class ScriptError extends KilnInputError {
  override readonly name = 'ScriptError';
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`script ${file}: ${problem}`);
  }
}

const ToolUseSchema = z.strictObject({
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()).default({}),
});

const ErrorSpecSchema = z.strictObject({
  status: z.number().int().min(400).max(599),
  /** Anthropic error type; derived from the status when absent */
  type: z.string().min(1).optional(),
  message: z.string().optional(),
  retry_after_s: z.number().nonnegative().optional(),
  /** how many requests for this (run, turn) fail before the normal reply; "always" never lets one through */
  times: z.union([z.number().int().positive(), z.literal('always')]).default(1),
});

const ExpectSchema = z.strictObject({
  tool_result_contains: z.string().optional(),
  tool_result_is_error: z.boolean().optional(),
  user_contains: z.string().optional(),
  system_contains: z.string().optional(),
});

const StepSchema = z
  .strictObject({
    text: z.string().optional(),
    tool_use: z.array(ToolUseSchema).optional(),
    stop_reason: z.enum(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal', 'pause_turn']).optional(),
    expect: ExpectSchema.optional(),
    error: ErrorSpecSchema.optional(),
    repeat: z.number().int().positive().max(10_000).optional(),
  })
  .superRefine((step, ctx) => {
    const replies = step.text !== undefined || (step.tool_use?.length ?? 0) > 0;
    if (!replies && step.error?.times !== 'always')
      ctx.addIssue({ code: 'custom', message: 'needs "text" or "tool_use" (only an error with times "always" may go without)' });
    if (step.stop_reason === 'tool_use' && (step.tool_use?.length ?? 0) === 0)
      ctx.addIssue({ code: 'custom', message: 'stop_reason "tool_use" needs at least one tool_use' });
  });

const ScriptFileSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().min(1).optional(),
  description: z.string().optional(),
  steps: z.array(StepSchema).min(1),
  /** the independent reviewer's replies, review 1 first (its call is apart from the turns) */
  reviews: z.array(StepSchema).optional(),
});

export type ScriptToolUse = z.infer<typeof ToolUseSchema>;
export type ScriptedErrorSpec = z.infer<typeof ErrorSpecSchema>;
export type ScriptExpect = z.infer<typeof ExpectSchema>;

/** One turn's answer, after `repeat` is expanded. */
export interface ScriptStep extends Omit<z.infer<typeof StepSchema>, 'repeat'> {
  /** where the step is in the file, for messages: "step 3" or "step 3, repeat 2 of 10" */
  origin: string;
}

export interface Script {
  name: string;
  /** absolute path */
  file: string;
  /** steps[n - 1] answers turn n */
  steps: ScriptStep[];
  /** reviews[n - 1] answers review n */
  reviews: ScriptStep[];
}

/** "step 3: tool_use[0].name: …": steps are counted from 1 like turns, the rest of the path as in the file. */
function describePath(issuePath: ReadonlyArray<PropertyKey>): string {
  const parts = [...issuePath];
  let step = '';
  if (parts[0] === 'steps' && typeof parts[1] === 'number') {
    step = `step ${parts[1] + 1}`;
    parts.splice(0, 2);
  }
  let rest = '';
  for (const part of parts) rest += typeof part === 'number' ? `[${part}]` : `${rest === '' ? '' : '.'}${String(part)}`;
  return [step, rest].filter((s) => s !== '').join(': ');
}

/** Validates and expands a script's text. Pure; `file` is only used in names and messages. */
export function parseScript(text: string, file: string): Script {
  // the file is named by whoever starts the run, and read by the worker: its error names places, never content
  const data = parseJsonText(text, ScriptFileSchema, (problem) => new ScriptError(file, problem), { where: describePath, hideContent: true });
  return { name: data.name ?? path.basename(file, path.extname(file)), file, steps: expand(data.steps, 'step'), reviews: expand(data.reviews ?? [], 'review') };
}

function expand(list: z.infer<typeof StepSchema>[], what: string): ScriptStep[] {
  const steps: ScriptStep[] = [];
  list.forEach(({ repeat, ...step }, i) => {
    const times = repeat ?? 1;
    for (let copy = 1; copy <= times; copy++)
      steps.push({ ...step, origin: times === 1 ? `${what} ${i + 1}` : `${what} ${i + 1}, repeat ${copy} of ${times}` });
  });
  return steps;
}

const cache = new Map<string, { mtimeMs: number; size: number; script: Script }>();

/**
 * Reads and validates a script file (relative paths from the working directory). Parsed
 * scripts are kept by path and modification time, so a script edited between runs is read again.
 */
export async function loadScript(file: string): Promise<Script> {
  const abs = path.resolve(file);
  let info;
  try {
    info = await stat(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ScriptError(abs, code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? String(err)})`);
  }
  if (!info.isFile()) throw new ScriptError(abs, 'not a file');
  const hit = cache.get(abs);
  if (hit && hit.mtimeMs === info.mtimeMs && hit.size === info.size) return hit.script;
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (err) {
    throw new ScriptError(abs, `cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const script = parseScript(text, abs);
  cache.set(abs, { mtimeMs: info.mtimeMs, size: info.size, script });
  return script;
}
