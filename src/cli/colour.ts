/**
 * Colour for people at a terminal only: never in pipes or files, never with NO_COLOR set
 * (https://no-color.org), always with FORCE_COLOR.
 */
const CODES = { green: 32, red: 31, yellow: 33, dim: 2 } as const;

export function colourOn(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

export function paint(text: string, colour: keyof typeof CODES, on: boolean): string {
  return on ? `\u001b[${CODES[colour]}m${text}\u001b[0m` : text;
}

/** The outcome line of a summary in the colour of its verdict. */
export function paintSummary(summary: string, on: boolean): string {
  const [first = '', ...rest] = summary.split('\n');
  const colour = first.startsWith('✔') ? 'green' : first.startsWith('✖') ? 'yellow' : 'red';
  return [paint(first, colour, on), ...rest].join('\n');
}
