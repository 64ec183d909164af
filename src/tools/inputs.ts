import { z } from 'zod';

/*
 * One zod schema per tool: the parser of what the model sends and, through
 * z.toJSONSchema, the input_schema the model is shown. Objects are strict so a
 * misspelt field (`replaceAll`) comes back as an error instead of being ignored.
 */

const relPath = z.string().min(1).describe('Path relative to the workspace root, e.g. "src/auth/login.ts". No absolute paths, no "..".');

const lineNumber = z.number().int().min(1);

export const readFileInput = z
  .strictObject({
    path: relPath,
    start_line: lineNumber.optional().describe('First line to show, 1-based. Default 1.'),
    end_line: lineNumber.optional().describe('Last line to show, inclusive. Default: as far as the 2000-line / 100 KB limit allows.'),
  })
  .describe(
    'Read a text file of the workspace, with line numbers ("  12\\tcode"). Shows at most 2000 lines or 100 KB per call; ' +
      'the output says how to read further (start_line). Prefer search to find where something is, then read the lines around it.',
  );

export const listFilesInput = z
  .strictObject({
    glob: z
      .string()
      .min(1)
      .optional()
      .describe('Glob to filter paths, e.g. "src/**/*.ts" or "*.md" (a glob without "/" matches the file name at any depth). Default: all files.'),
  })
  .describe(
    'List the files of the workspace (tracked and untracked, .gitignore respected), sorted, at most 1000 per call. ' +
      'Use a glob to narrow large repositories.',
  );

export const searchInput = z
  .strictObject({
    pattern: z.string().min(1).describe('Text to find. Literal unless regex is true.'),
    path_glob: z.string().min(1).optional().describe('Only search files matching this glob, e.g. "src/**/*.ts" or "*.py". Prefix with "!" to exclude.'),
    regex: z.boolean().default(false).describe('Treat pattern as a regular expression (Rust regex syntax, like ripgrep). Default false: literal text.'),
    case: z
      .enum(['sensitive', 'insensitive', 'smart'])
      .default('smart')
      .describe('"smart" (default): insensitive unless the pattern has an upper-case letter.'),
  })
  .describe(
    'Search file contents of the workspace (ripgrep; .gitignore respected). Returns matching lines grouped by file with line numbers, ' +
      'at most 200 lines per call; the output says how many were cut. Use this before reading files to find where code lives.',
  );

export const editInput = z
  .strictObject({
    path: relPath,
    old_string: z
      .string()
      .min(1)
      .describe(
        'Exact text to replace, including whitespace and indentation, copied from read_file output without the line-number prefix. ' +
          'Must occur exactly once unless replace_all is true: include enough surrounding lines to make it unique.',
      ),
    new_string: z.string().describe('Replacement text. Must differ from old_string. May be empty to delete.'),
    replace_all: z.boolean().default(false).describe('Replace every occurrence of old_string. Default false.'),
  })
  .describe(
    'Change an existing file by exact text replacement. old_string must match exactly once unless replace_all; ' +
      'include enough context lines to make it unique. On no match the error shows the nearest lines. ' +
      'Read the file first. Use create_file for new files.',
  );

export const createFileInput = z
  .strictObject({
    path: relPath,
    content: z.string().describe('Full content of the new file.'),
  })
  .describe('Create a NEW file (parent directories are created). Fails if the file exists: use edit to change existing files.');

export const RUN_COMMAND_DEFAULT_TIMEOUT_MS = 120_000;
export const RUN_COMMAND_MAX_TIMEOUT_MS = 600_000;

export const runCommandInput = z
  .strictObject({
    command: z.string().min(1).describe('Shell command, run with bash in the workspace root, e.g. "npm test -- auth".'),
    timeout_ms: z
      .number()
      .int()
      .min(1000)
      .max(RUN_COMMAND_MAX_TIMEOUT_MS)
      .default(RUN_COMMAND_DEFAULT_TIMEOUT_MS)
      .describe(`Kill the command after this many milliseconds. Default ${RUN_COMMAND_DEFAULT_TIMEOUT_MS}, max ${RUN_COMMAND_MAX_TIMEOUT_MS}.`),
    reason: z.string().trim().min(1).describe('Why this command is needed, in one sentence; shown to the person asked to approve it.'),
  })
  .describe(
    'Run a shell command in a sandbox: no network, only the workspace is writable, output is capped. ' +
      'Use it to run tests, builds and linters; some commands need approval. Do not use it to read or edit files: use the file tools.',
  );

export const PLAN_STATUSES = ['pending', 'in_progress', 'done'] as const;

export const updatePlanInput = z
  .strictObject({
    steps: z
      .array(
        z.strictObject({
          step: z.string().trim().min(1).describe('What this step does, one short sentence.'),
          status: z.enum(PLAN_STATUSES),
        }),
      )
      .min(1)
      .max(30)
      .describe('The whole plan, 1 to 30 steps, in order; it replaces the previous plan.'),
  })
  .describe(
    'Record your plan and progress. Send the full list each time; keep at most one step in_progress. ' +
      'Call it first with your plan and again when a step is done.',
  );

export const reflectInput = z
  .strictObject({
    attempt: z.number().int().min(1).describe('The attempt you are starting now (2 for the first retry).'),
    last_failure: z.string().trim().min(1).describe('What failed last time, as the verifier reported it.'),
    last_cause: z.string().trim().min(1).describe('Why it failed: the cause in the code, not the symptom.'),
    this_fix: z.string().trim().min(1).describe('What you will change now.'),
    rationale: z.string().trim().min(1).describe('Why that change fixes the cause.'),
    changed_files: z.array(z.string().min(1)).describe('The files you expect to change in this attempt.'),
  })
  .describe('Before any edit in a retry, reflect on the failed attempt. Required once per retry; edits are refused until a valid reflection is given.');

export const finishInput = z
  .strictObject({
    summary: z.string().trim().min(1).describe('What you changed and why, and how you checked it (commands run, their result).'),
  })
  .describe(
    'Declare the task done. Only accepted after the checks were run since your last edit; verification then runs the project checks ' +
      'and may send you back with the failures.',
  );

export type ReadFileInput = z.output<typeof readFileInput>;
export type ListFilesInput = z.output<typeof listFilesInput>;
export type SearchInput = z.output<typeof searchInput>;
export type EditInput = z.output<typeof editInput>;
export type CreateFileInput = z.output<typeof createFileInput>;
export type RunCommandInput = z.output<typeof runCommandInput>;
export type UpdatePlanInput = z.output<typeof updatePlanInput>;
export type ReflectInput = z.output<typeof reflectInput>;
export type FinishInput = z.output<typeof finishInput>;
