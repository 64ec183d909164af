/** any UTF-16 unit outside ASCII (surrogates included) */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The one token estimate: the context packer's budgets, compaction, the prompt-cache breakpoint
 * and the scripted model server's usage all count with it, so they agree by construction.
 * Cheap and deterministic, not a tokenizer. English and code run about 4 characters per token;
 * CJK text about one token per character (often more), so counting it at 1/4 would overfill a
 * budget by 3-4x for a Chinese goal or rules file. Other non-ASCII (accents, symbols) sits between.
 * A value that is not a string is counted as its JSON.
 */
export function estimateTokens(value: unknown): number {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  // the conversation is counted whole several times a turn: most of it is ASCII, which a native
  // regex scan settles without the per-character loop
  if (!NON_ASCII.test(text)) return Math.ceil(text.length / 4);
  let ascii = 0;
  let wide = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) ascii++;
    else if (c >= 0x2e80) wide++;
    else other++;
  }
  return Math.ceil(ascii / 4 + other / 2 + wide);
}
