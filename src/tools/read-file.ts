/*
 * read_file: a text file of the workspace, with line numbers, a page at a time. Its name and
 * flags are in catalog.ts; this is the rest of it.
 */
import { z } from 'zod';
import { judgeRead } from '../policy/files.js';
import { need } from '../policy/judging.js';
import { relPath } from './fields.js';
import { fail, ok, type ToolOutcome } from './outcome.js';
import { safeReadFile, WorkspacePathError } from './safe-fs.js';
import { defineTool } from './spec.js';
import { decodeText, numberLines, splitLines } from './text.js';

const lineNumber = z.number().int().min(1);

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
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

export type ReadFileInput = z.output<typeof readFileInput>;

export const readFileTool = defineTool({
  schema: readFileInput,
  judge: (input, ctx) => {
    const p = need(input, 'path', 'read_file');
    return { verdict: typeof p === 'string' ? judgeRead(ctx, p) : p };
  },
  run: async (host, v) => host.result(await readFile(host.workspace, v)),
  summary: (v) => `read_file ${v.path}${v.start_line ? `:${v.start_line}-${v.end_line ?? ''}` : ''}`,
});

export const READ_MAX_LINES = 2000;
export const READ_MAX_BYTES = 100 * 1024;
/** Minified bundles have single lines of megabytes; one line must not eat the budget. */
export const READ_MAX_LINE_CHARS = 2000;

export interface ReadFileLimits {
  maxLines?: number;
  maxBytes?: number;
}

export function readFile(workspace: string, input: Pick<ReadFileInput, 'path'> & Partial<ReadFileInput>, limits: ReadFileLimits = {}): ToolOutcome {
  const maxLines = limits.maxLines ?? READ_MAX_LINES;
  const maxBytes = limits.maxBytes ?? READ_MAX_BYTES;
  let data: Buffer;
  let rel: string;
  try {
    ({ data, rel } = safeReadFile(workspace, input.path));
  } catch (e) {
    if (e instanceof WorkspacePathError) return fail(e.message);
    throw e;
  }
  const text = decodeText(data);
  if (text === null) return fail(`${rel} is a binary file (${data.length} bytes); not shown.`);
  if (text === '') return ok(`${rel} is empty (0 lines).`);

  const lines = splitLines(text);
  const total = lines.length;
  const start = input.start_line ?? 1;
  if (start > total) return fail(`${rel} has ${total} lines; start_line ${start} is past the end.`);
  if (input.end_line !== undefined && input.end_line < start) {
    return fail(`end_line ${input.end_line} is before start_line ${start}.`);
  }
  const wantedEnd = Math.min(input.end_line ?? total, total);

  // Take lines until either limit is reached; always at least one line so progress is possible.
  let end = start - 1;
  let bytes = 0;
  let longLines = 0;
  const shown: string[] = [];
  while (end < wantedEnd && shown.length < maxLines) {
    let line = lines[end]!;
    if (line.length > READ_MAX_LINE_CHARS) {
      line = `${line.slice(0, READ_MAX_LINE_CHARS)} [... line cut, ${line.length - READ_MAX_LINE_CHARS} more characters]`;
      longLines++;
    }
    const size = Buffer.byteLength(line) + 8;
    if (shown.length > 0 && bytes + size > maxBytes) break;
    bytes += size;
    shown.push(line);
    end++;
  }

  let body = numberLines(shown, start);
  const notes: string[] = [];
  if (end < wantedEnd) {
    notes.push(`showing lines ${start}-${end} of ${total}; call read_file with start_line=${end + 1} to read further`);
  } else if (start > 1 || end < total) {
    notes.push(`lines ${start}-${end} of ${total}`);
  }
  if (longLines > 0) notes.push(`${longLines} long line(s) were cut at ${READ_MAX_LINE_CHARS} characters`);
  if (notes.length > 0) body += `\n[${notes.join('; ')}]`;
  return ok(body);
}
