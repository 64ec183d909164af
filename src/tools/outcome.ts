/** What every tool hands back: `content` goes to the model, `fullOutput` to the run's artifacts. */
export interface ToolOutcome {
  ok: boolean;
  /** model-facing text, already capped */
  content: string;
  /** the uncut text, present only when `content` was cut */
  fullOutput?: string;
}

/**
 * Keep the head and the tail of `text` within `maxChars`: the start of an output says what
 * ran, the end usually says how it ended (the error, the summary line), the middle is
 * the part a model can most afford to lose.
 */
export function capText(text: string, maxChars: number): { text: string; cut: number } {
  if (text.length <= maxChars) return { text, cut: 0 };
  const marker = (n: number) => `\n[... ${n} characters cut ...]\n`;
  // The marker's own length depends on the number it prints; reserve for the widest case.
  const room = Math.max(0, maxChars - marker(text.length).length);
  const headLen = Math.ceil(room * 0.6);
  const tailLen = room - headLen;
  const cut = text.length - headLen - tailLen;
  const tail = tailLen > 0 ? text.slice(text.length - tailLen) : '';
  return { text: text.slice(0, headLen) + marker(cut) + tail, cut };
}

export function ok(content: string, fullOutput?: string): ToolOutcome {
  return fullOutput === undefined ? { ok: true, content } : { ok: true, content, fullOutput };
}

export function fail(content: string): ToolOutcome {
  return { ok: false, content };
}
