/** Text helpers shared by the file tools and the context builder. */

/** Same heuristic as git and ripgrep: a NUL byte near the start means binary. */
export function isBinary(data: Buffer): boolean {
  return data.subarray(0, 8000).includes(0);
}

/** UTF-8 text of a file, or null for binary content. */
export function decodeText(data: Buffer): string | null {
  if (isBinary(data)) return null;
  return data.toString('utf8');
}

/** Lines without their terminators; a final newline does not make an extra empty line. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

/** "  12\tcode" — the number width follows the largest number shown, at least 4. */
export function numberLines(lines: readonly string[], firstLine: number): string {
  const width = Math.max(4, String(firstLine + lines.length - 1).length);
  return lines.map((l, i) => `${String(firstLine + i).padStart(width)}\t${l}`).join('\n');
}

/** 1-based line number of a character offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  let i = text.indexOf('\n');
  while (i !== -1 && i < offset) {
    line++;
    i = text.indexOf('\n', i + 1);
  }
  return line;
}
