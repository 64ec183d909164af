import { safeReadFile, WorkspacePathError } from '../tools/safe-fs.js';
import { decodeText, numberLines, splitLines } from '../tools/text.js';

export interface SnippetOptions {
  /** lines shown before and after each matching line; default 3 */
  context?: number;
  /** total lines shown; default 60 */
  maxLines?: number;
  /** lines shown from the top when nothing matches; default 30 */
  headLines?: number;
}

/**
 * The parts of a file around lines that mention a keyword, numbered like read_file so the
 * model can cite and edit them; windows closer than two lines apart are merged. Files
 * with no match (a paired test, say) show their head instead.
 */
export function relevantSnippets(workspace: string, file: string, keywords: readonly string[], opts: SnippetOptions = {}): string {
  const ctx = opts.context ?? 3;
  const maxLines = opts.maxLines ?? 60;
  let text: string | null;
  try {
    text = decodeText(safeReadFile(workspace, file, 5 * 1024 * 1024).data);
  } catch (e) {
    if (e instanceof WorkspacePathError) return `[${e.message}]`;
    throw e;
  }
  if (text === null) return '[binary file]';
  const lines = splitLines(text).map((l) => (l.length > 300 ? `${l.slice(0, 300)} [...]` : l));
  const needles = keywords.map((k) => k.toLowerCase()).filter((k) => k !== '');
  const matching: number[] = [];
  lines.forEach((l, i) => {
    const low = l.toLowerCase();
    if (needles.some((k) => low.includes(k))) matching.push(i);
  });

  if (matching.length === 0) {
    const head = Math.min(lines.length, opts.headLines ?? 30, maxLines);
    const more = lines.length > head ? `\n[... ${lines.length - head} more lines]` : '';
    return numberLines(lines.slice(0, head), 1) + more;
  }

  const windows: Array<[number, number]> = [];
  for (const i of matching) {
    const start = Math.max(0, i - ctx);
    const end = Math.min(lines.length - 1, i + ctx);
    const last = windows[windows.length - 1];
    if (last && start <= last[1] + 2) last[1] = Math.max(last[1], end);
    else windows.push([start, end]);
  }

  const parts: string[] = [];
  let used = 0;
  let shownWindows = 0;
  for (const [start, end] of windows) {
    const room = maxLines - used;
    if (room <= 0) break;
    const stop = Math.min(end, start + room - 1);
    parts.push(numberLines(lines.slice(start, stop + 1), start + 1));
    used += stop - start + 1;
    shownWindows++;
  }
  let out = parts.join('\n     ...\n');
  if (shownWindows < windows.length) out += `\n[... ${windows.length - shownWindows} more matching regions; ${lines.length} lines in all]`;
  return out;
}
