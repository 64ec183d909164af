import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getProcessor } from 'sh-syntax';

/*
 * mvdan/sh (bash variant), compiled to wasm. Go's wasm runtime needs a fresh instance per call,
 * but compiling the module is most of the cost: it is compiled once per process and only
 * instantiated per call (measured by `npm run bench`, policy latency).
 */
// the project compiles without the DOM lib, which is where TypeScript declares WebAssembly
const wasm = (globalThis as unknown as { WebAssembly: { compile(b: Uint8Array): Promise<object>; instantiate(m: object, imports: unknown): Promise<never> } })
  .WebAssembly;
let compiled: Promise<object> | undefined;
const wasmModule = () =>
  (compiled ??= wasm.compile(readFileSync(join(dirname(fileURLToPath(import.meta.resolve('sh-syntax'))), '..', 'main.wasm'))));
const parse = getProcessor(async (importObject: unknown) => wasm.instantiate(await wasmModule(), importObject));

/** Asks the shell parser whether `src` is valid shell. Returns the parse error text, or null when it parses. */
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
