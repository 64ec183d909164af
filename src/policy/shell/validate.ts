import { parse } from 'sh-syntax';

/**
 * Asks mvdan/sh (bash variant) whether `src` is valid shell. Returns the parse
 * error text, or null when it parses. Every call instantiates the wasm module
 * (~15 ms here), which is cheap next to running the command.
 */
export async function shellSyntaxError(src: string): Promise<string | null> {
  try {
    await parse(src, { keepComments: false });
    return null;
  } catch (e) {
    const err = e as { Text?: string; Pos?: { Line: number; Col: number }; message?: string };
    const where = err.Pos && err.Pos.Line > 0 ? `${err.Pos.Line}:${err.Pos.Col}: ` : '';
    return `${where}${err.Text ?? err.message ?? String(e)}`;
  }
}
