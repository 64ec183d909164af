/**
 * What an edit the policy asks about would change, for the person who decides: a unified diff
 * of the file before and after, computed the way the edit itself would be (prepareEdit, which
 * touches nothing), redacted, and bounded so a pending approval stays small in the run's state
 * and history.
 */
import { createPatch } from 'diff';
import { redact } from '../redact/index.js';
import { prepareEdit } from '../tools/edit.js';
import type { ParsedToolInput } from '../tools/schemas.js';

/** Lines of the preview kept: enough to judge most edits at a glance; the rest is counted. */
export const PREVIEW_MAX_LINES = 60;
/** A minified file is one long line: each is cut here. */
const PREVIEW_LINE_CHARS = 240;
export const PREVIEW_MAX_CHARS = 6000;

/** The diff an edit or create_file would make, or undefined for other tools or an edit that would fail. */
export function approvalPreview(workspace: string, call: ParsedToolInput): string | undefined {
  if (call.name !== 'edit' && call.name !== 'create_file') return undefined;
  let prepared: ReturnType<typeof prepareEdit>;
  try {
    prepared = prepareEdit(workspace, call.name, call.value);
  } catch {
    // the edit itself will say what is wrong once it runs; a preview is only a help
    return undefined;
  }
  if (!prepared.ok) return undefined;
  if (prepared.before === null) return bound(redact(newFile(prepared.path, prepared.after)));
  // a diff with many changes (replace_all over a large file) costs seconds: past these it is not drawn
  const patch = createPatch(prepared.path, prepared.before, prepared.after, '', '', { context: 3, maxEditLength: PREVIEW_MAX_EDITS, timeout: PREVIEW_DIFF_MS });
  if (patch === undefined)
    return `${prepared.path}: too large a change to preview (${lineCount(prepared.before)} lines before, ${lineCount(prepared.after)} after)`;
  // createPatch opens with "Index:" and a rule; the ---/+++ lines name the file
  return bound(redact(patch.split('\n').slice(2).join('\n')));
}

/** An MCP call's arguments as a person reads them before approving: indented JSON, redacted and bounded. */
export function mcpArgsPreview(input: unknown): string {
  return bound(redact(JSON.stringify(input ?? {}, null, 2)));
}

/** Edits the diff may need before it gives up, and the time it may take (it then gives up too). */
const PREVIEW_MAX_EDITS = 2000;
const PREVIEW_DIFF_MS = 200;

/**
 * A new file's diff is every line added: written directly, since the diff algorithm takes
 * ~0.8 s over 50,000 lines to find that out. The same text createPatch writes.
 */
function newFile(path: string, content: string): string {
  const lines = content === '' ? [] : content.replace(/\n$/, '').split('\n');
  const head = [`--- ${path}\tnew file`, `+++ ${path}`];
  if (!lines.length) return head.join('\n');
  const body = [`@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => `+${l}`)];
  if (!content.endsWith('\n')) body.push('\\ No newline at end of file');
  return [...head, ...body].join('\n');
}

function lineCount(text: string): number {
  return text === '' ? 0 : text.replace(/\n$/, '').split('\n').length;
}

function bound(patch: string): string {
  const lines = patch.replace(/\n$/, '').split('\n');
  const kept: string[] = [];
  let chars = 0;
  for (const l of lines) {
    const line = l.length > PREVIEW_LINE_CHARS ? `${l.slice(0, PREVIEW_LINE_CHARS)} … (${l.length - PREVIEW_LINE_CHARS} more characters)` : l;
    if (kept.length >= PREVIEW_MAX_LINES || chars + line.length + 1 > PREVIEW_MAX_CHARS) break;
    kept.push(line);
    chars += line.length + 1;
  }
  const left = lines.length - kept.length;
  return left > 0 ? `${kept.join('\n')}\n… ${left} more line${left === 1 ? '' : 's'} of the diff not shown` : kept.join('\n');
}
