import type { z } from 'zod';
import type { RunToolResult } from '../shared/contracts.js';
import type { ToolJudge } from '../policy/judging.js';
import type { CreateFileInput } from './create-file.js';
import type { EditRequest } from './edit.js';
import type { ToolOutcome } from './outcome.js';

export type DoneResult = Extract<RunToolResult, { status: 'done' }>;

/**
 * What a tool may ask of the activity running it. The activity owns the run's files, its
 * journal and the sandbox; a tool says what to do with them, so the crash-safety of an edit
 * or a command is written once, not once per tool.
 */
export interface ToolHost {
  /** absolute path of the run's worktree */
  readonly workspace: string;
  /** the call's outcome, as the model reads it; the effect is the tool's (catalog.ts) */
  result(out: ToolOutcome): Promise<RunToolResult>;
  /** a successful call whose text and observation the tool words itself */
  record(content: string, view: { summary: string; plan?: DoneResult['plan'] }): Promise<RunToolResult>;
  /** change one file exactly once: journaled, so a retry after a crash neither loses nor repeats it */
  edit(tool: 'edit' | 'create_file', input: EditRequest | CreateFileInput): Promise<RunToolResult>;
  /** run a command in the sandbox; after a crash, again only if policy judged it safe to repeat */
  command(command: string, timeoutMs: number | undefined): Promise<RunToolResult>;
  /** keep one line in the run's decision log (decisions.jsonl) */
  logDecision(entry: Record<string, unknown>): Promise<void>;
}

/**
 * One tool: the schema the model is shown and its input is parsed with (its descriptions are the
 * tool's prompt text), its policy judgement, how an allowed call runs, and the one line that names
 * a call in logs and the Web UI. Its name and flags are its entry in catalog.ts.
 */
export interface ToolSpec<S extends z.ZodObject = z.ZodObject> {
  readonly schema: S;
  readonly judge: ToolJudge;
  run(host: ToolHost, input: z.output<S>): Promise<RunToolResult>;
  summary(input: z.output<S>): string;
}

/** Types `run` and `summary` by the schema's output. */
export function defineTool<S extends z.ZodObject>(spec: ToolSpec<S>): ToolSpec<S> {
  return spec;
}
