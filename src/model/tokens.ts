/**
 * A rough token count: about four characters a token for English and code. Used where the
 * real count is not available (the scripted server's usage); the context packer keeps its
 * own estimate, and the two agree because both are ceil(chars / 4).
 */
export function estimateTokens(value: unknown): number {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return Math.ceil(text.length / 4);
}
