/**
 * POSIX single-quote quoting: inside '...' nothing is special, and a single quote is written as
 * '\'' (close, escaped quote, reopen). Words made only of safe characters stay bare for legibility.
 */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function shellJoin(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
