import { fail, ok, type ToolOutcome } from './outcome.js';
import { safeReadFile, WorkspacePathError } from './safe-fs.js';
import type { ReadFileInput } from './inputs.js';
import { decodeText, numberLines, splitLines } from './text.js';

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
