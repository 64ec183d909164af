/*
 * edit: an exact text replacement in a file of the workspace. Its name and flags are in
 * catalog.ts; this is the rest of it, and the two-step edit that create_file makes files with too.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { judgeFileWrite, str } from '../policy/judging.js';
import type { CreateFileInput } from './create-file.js';
import { relPath } from './fields.js';
import { fail, ok, type ToolOutcome } from './outcome.js';
import { entryKind, workspaceTarget, safeReadFile, safeWriteFile, WorkspacePathError } from './safe-fs.js';
import { defineTool } from './spec.js';
import { isBinary, lineAt, numberLines, splitLines } from './text.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
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

export type EditInput = z.output<typeof editInput>;

/** What callers may pass: parsed input, or the same with replace_all left out (false). */
export type EditRequest = Omit<EditInput, 'replace_all'> & { replace_all?: boolean };

export const editTool = defineTool({
  schema: editInput,
  // a package.json is judged on its text after the edit, worked out here as the edit would make it
  judge: async (input, ctx) => ({
    verdict: await judgeFileWrite('edit', input, ctx, (before) => {
      const oldS = str(input, 'old_string') ?? '';
      const newS = str(input, 'new_string') ?? '';
      if (before === null || !oldS || !before.includes(oldS)) return newS;
      return input.replace_all === true ? before.split(oldS).join(newS) : before.replace(oldS, () => newS);
    }),
  }),
  run: (host, v) => host.edit('edit', v),
  summary: (v) => `edit ${v.path}`,
});

/*
 * Edits come in two steps so the caller can make them idempotent across crashes:
 * prepareEdit computes the new content without touching disk, commitEdit writes it.
 * A commit that finds `after` already on disk is a no-op; one that finds neither
 * `before` nor `after` refuses, since someone else changed the file in between.
 */

export type PreparedEdit =
  | { ok: false; error: string }
  | {
      ok: true;
      /** workspace-relative, forward slashes */
      path: string;
      /** null: the file is new */
      before: string | null;
      after: string;
      /** one line for the model, e.g. "replaced 1 occurrence (lines 12-14)" */
      summary: string;
      /** 1-based line range of the first change in `after`, for showing the result */
      firstChange: { start: number; end: number };
    };

export type EditToolName = 'edit' | 'create_file';

const MAX_EDIT_FILE_BYTES = 10 * 1024 * 1024;

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** sha256 of the file's content, null when there is no file; recognises an applied edit. */
export async function fileHash(workspace: string, rel: string): Promise<string | null> {
  try {
    return createHash('sha256').update(safeReadFile(workspace, rel).data).digest('hex');
  } catch (e) {
    if (e instanceof WorkspacePathError && e.code === 'not_found') return null;
    throw e;
  }
}

function countOccurrences(hay: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

function lineSpan(s: string): number {
  return s.split('\n').length - (s.endsWith('\n') ? 1 : 0);
}

/** Models copy with tabs turned to spaces, lines re-indented, trailing blanks dropped. */
function normalizeLine(l: string): string {
  return l.trim().replace(/\s+/g, ' ');
}

/** Character-bigram Dice similarity in [0, 1]. */
function similarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const grams = new Map<string, number>();
  for (let i = 0; i < a.length - 1; i++) {
    const g = a.slice(i, i + 2);
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  let common = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.slice(i, i + 2);
    const n = grams.get(g) ?? 0;
    if (n > 0) {
      common++;
      grams.set(g, n - 1);
    }
  }
  return (2 * common) / (a.length - 1 + b.length - 1);
}

const HINT_CONTEXT = 2;
const HINT_MAX_LINES = 12;

function excerpt(lines: readonly string[], start: number, end: number): string {
  const from = Math.max(1, start - HINT_CONTEXT);
  const to = Math.min(lines.length, end + HINT_CONTEXT, from + HINT_MAX_LINES - 1);
  return numberLines(lines.slice(from - 1, to), from);
}

/** Explain a zero-match edit with the nearest text the file does contain. */
export function nearMatchHint(content: string, oldString: string): string {
  const lines = splitLines(content);
  const want = splitLines(oldString).map(normalizeLine);
  while (want.length > 0 && want[0] === '') want.shift();
  while (want.length > 0 && want[want.length - 1] === '') want.pop();
  if (want.length === 0 || lines.length === 0) return '';
  const have = lines.map(normalizeLine);

  // 1. The same lines up to whitespace: the usual cause is indentation or tabs.
  const ws: number[] = [];
  for (let i = 0; i + want.length <= have.length; i++) {
    if (want.every((w, j) => have[i + j] === w)) ws.push(i + 1);
  }
  if (ws.length > 0) {
    const first = ws[0]!;
    return (
      `old_string matches lines ${ws.map((s) => `${s}-${s + want.length - 1}`).join(', ')} if whitespace is ignored; ` +
      `copy the exact text (indentation, tabs, trailing spaces):\n${excerpt(lines, first, first + want.length - 1)}`
    );
  }

  // 2. Lines that look like the first line of old_string: the block start is right, something below differs.
  const head = want[0]!;
  const scored = have
    .map((h, i) => ({ line: i + 1, score: h === head ? 1 : similarity(h, head) }))
    .filter((s) => s.score >= 0.5)
    .sort((a, b) => b.score - a.score || a.line - b.line)
    .slice(0, 3);
  if (scored.length === 0) {
    return 'No similar lines were found; read the file again to see its current content.';
  }
  const best = scored[0]!;
  const others = scored.slice(1).map((s) => s.line);
  return (
    `The closest match to the first line of old_string is line ${best.line}` +
    (others.length ? ` (also similar: line${others.length > 1 ? 's' : ''} ${others.join(', ')})` : '') +
    `; the file there reads:\n${excerpt(lines, best.line, best.line + want.length - 1)}`
  );
}

function readForEdit(workspace: string, p: string): { rel: string; text: string } | { error: string } {
  try {
    const { rel, data } = safeReadFile(workspace, p, MAX_EDIT_FILE_BYTES);
    if (isBinary(data)) return { error: `${rel} is a binary file; edit only changes text files.` };
    const text = data.toString('utf8');
    if (!Buffer.from(text, 'utf8').equals(data)) {
      return { error: `${rel} is not valid UTF-8; editing it would corrupt it.` };
    }
    return { rel, text };
  } catch (e) {
    if (e instanceof WorkspacePathError) {
      if (e.code === 'not_found') return { error: `${e.message}; use create_file to make a new file.` };
      return { error: e.message };
    }
    throw e;
  }
}

function prepareReplace(workspace: string, input: EditInput): PreparedEdit {
  if (input.old_string === input.new_string) {
    return { ok: false, error: 'old_string and new_string are identical; nothing would change.' };
  }
  const file = readForEdit(workspace, input.path);
  if ('error' in file) return { ok: false, error: file.error };
  const { rel, text } = file;

  let oldS = input.old_string;
  let newS = input.new_string;
  let at = countOccurrences(text, oldS);
  // CRLF files: the model sees and sends "\n"; match and write in the file's own line ending.
  if (at.length === 0 && text.includes('\r\n') && !oldS.includes('\r')) {
    const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
    at = countOccurrences(text, crlf(oldS));
    if (at.length > 0) {
      oldS = crlf(oldS);
      newS = crlf(newS);
    }
  }
  if (at.length === 0) {
    const hint = nearMatchHint(text, input.old_string);
    return { ok: false, error: `old_string was not found in ${rel}.${hint ? ` ${hint}` : ''}` };
  }
  const lines = at.map((i) => lineAt(text, i));
  if (at.length > 1 && !input.replace_all) {
    return {
      ok: false,
      error:
        `old_string occurs ${at.length} times in ${rel} (starting at lines ${lines.join(', ')}). ` +
        'Include more surrounding lines to make it unique, or set replace_all=true to change every occurrence.',
    };
  }
  const after = input.replace_all ? text.split(oldS).join(newS) : text.slice(0, at[0]) + newS + text.slice(at[0]! + oldS.length);
  const start = lines[0]!;
  const span = Math.max(1, lineSpan(newS));
  const where = at.length === 1 ? `line${span > 1 ? 's' : ''} ${start}${span > 1 ? `-${start + span - 1}` : ''}` : `lines ${lines.join(', ')}`;
  return {
    ok: true,
    path: rel,
    before: text,
    after,
    summary: `replaced ${at.length} occurrence${at.length > 1 ? 's' : ''} in ${rel} (${where})`,
    firstChange: { start, end: start + span - 1 },
  };
}

function prepareCreate(workspace: string, input: CreateFileInput): PreparedEdit {
  let rel: string;
  try {
    rel = workspaceTarget(workspace, input.path).rel;
    const kind = entryKind(workspace, input.path);
    if (kind === 'dir') return { ok: false, error: `${rel} is a directory.` };
    if (kind !== null) {
      return { ok: false, error: `${rel} already exists; use edit to change an existing file (read it first).` };
    }
  } catch (e) {
    if (e instanceof WorkspacePathError) return { ok: false, error: e.message };
    throw e;
  }
  const n = input.content === '' ? 0 : splitLines(input.content).length;
  return {
    ok: true,
    path: rel,
    before: null,
    after: input.content,
    summary: `created ${rel} (${n} line${n === 1 ? '' : 's'})`,
    firstChange: { start: 1, end: Math.max(1, n) },
  };
}

export function prepareEdit(workspace: string, name: 'edit', input: EditRequest): PreparedEdit;
export function prepareEdit(workspace: string, name: 'create_file', input: CreateFileInput): PreparedEdit;
export function prepareEdit(workspace: string, name: EditToolName, input: EditRequest | CreateFileInput): PreparedEdit;
export function prepareEdit(workspace: string, name: EditToolName, input: EditRequest | CreateFileInput): PreparedEdit {
  if (name === 'create_file') return prepareCreate(workspace, input as CreateFileInput);
  const e = input as EditRequest;
  return prepareReplace(workspace, { ...e, replace_all: e.replace_all ?? false });
}

const RESULT_EXCERPT_LINES = 20;

/** Write a prepared edit. Applying the same prepared edit twice is harmless. */
export async function commitEdit(workspace: string, prepared: PreparedEdit): Promise<ToolOutcome> {
  if (!prepared.ok) return fail(prepared.error);
  const current = await fileHash(workspace, prepared.path).catch((e: unknown) => {
    if (e instanceof WorkspacePathError) return e;
    throw e;
  });
  if (current instanceof WorkspacePathError) return fail(current.message);
  const afterHash = sha256(prepared.after);
  if (current !== afterHash) {
    const expected = prepared.before === null ? null : sha256(prepared.before);
    if (current !== expected) {
      return fail(
        prepared.before === null
          ? `${prepared.path} was created by someone else in the meantime; read it and use edit.`
          : `${prepared.path} changed since the edit was prepared; read it again and redo the edit.`,
      );
    }
    try {
      safeWriteFile(workspace, prepared.path, prepared.after, {
        createOnly: prepared.before === null,
        mkdirs: prepared.before === null,
      });
    } catch (e) {
      if (e instanceof WorkspacePathError) return fail(e.message);
      throw e;
    }
  }
  const lines = splitLines(prepared.after);
  const { start, end } = prepared.firstChange;
  const from = Math.max(1, start - 2);
  const to = Math.min(lines.length, end + 2, from + RESULT_EXCERPT_LINES - 1);
  const shown = lines.length > 0 ? `\n${numberLines(lines.slice(from - 1, to), from)}` : '';
  const more = to < Math.min(lines.length, end + 2) ? `\n[excerpt cut; read_file ${prepared.path} to see the rest]` : '';
  return ok(`OK: ${prepared.summary}.${shown}${more}`);
}

/** prepareEdit + commitEdit in one step, for callers that need no crash idempotency. */
export async function applyEdit(workspace: string, name: EditToolName, input: EditRequest | CreateFileInput): Promise<ToolOutcome> {
  return commitEdit(workspace, prepareEdit(workspace, name, input));
}
