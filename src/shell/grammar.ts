import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

/*
 * tree-sitter-bash, compiled to wasm and run by web-tree-sitter: the same grammar Codex judges
 * shell commands with. @vscode/tree-sitter-wasm ships both prebuilt (no install script, no
 * network). Loading the runtime and the grammar is most of the cost (~80 ms), so it happens once
 * per process; a parse afterwards takes well under a millisecond (bench: policy latency).
 */

/** The part of web-tree-sitter's node API the walker uses. */
export interface SyntaxNode {
  readonly type: string;
  readonly text: string;
  readonly isNamed: boolean;
  readonly isMissing: boolean;
  readonly hasError: boolean;
  readonly startIndex: number;
  readonly endIndex: number;
  readonly children: readonly SyntaxNode[];
  readonly namedChildren: readonly SyntaxNode[];
  childForFieldName(name: string): SyntaxNode | null;
  childrenForFieldName(name: string): readonly SyntaxNode[];
  readonly nextSibling: SyntaxNode | null;
  readonly previousSibling: SyntaxNode | null;
}

/** Steps through a tree without recursion: the walk costs no stack however deep the tree. */
export interface TreeCursor {
  gotoFirstChild(): boolean;
  gotoNextSibling(): boolean;
  gotoParent(): boolean;
  readonly nodeType: string;
  readonly nodeIsNamed: boolean;
  readonly nodeIsMissing: boolean;
  readonly currentFieldName: string | null;
  delete(): void;
}

export interface SyntaxTree {
  readonly rootNode: SyntaxNode;
  walk(): TreeCursor;
  delete(): void;
}

export interface BashParser {
  /** null when `progressCallback` returned true: the parse was given up */
  parse(src: string, oldTree?: null, options?: { progressCallback?: () => boolean }): SyntaxTree | null;
  /** forgets a parse that stopped part way, so the next text starts afresh */
  reset(): void;
}

interface TreeSitterModule {
  Parser: { init(): Promise<void>; new (): BashParser & { setLanguage(l: unknown): void } };
  Language: { load(bytes: Uint8Array): Promise<unknown> };
}

let loaded: Promise<BashParser> | undefined;

/**
 * V8 tiers hot wasm up with TurboFan, and the bash grammar's generated lexer is one huge
 * function: tier-up took ~45 MB of resident memory in the worker (measured standalone: 2,200
 * parses, 55 → 102 MB RSS) for 150 instead of 220 µs a parse. Liftoff, the baseline compiler,
 * is kept. The flag is read when wasm is compiled; tree-sitter is the only wasm Kiln loads.
 */
const WASM_FLAGS = '--liftoff-only';

/**
 * tree-sitter's error recovery is quadratic in the worst case (20,000 stray `)` took 7 s): a
 * text that takes this long to parse is refused rather than waited for. An ordinary command
 * parses in well under a millisecond, a 10,000-command pipeline in ~0.4 s. (The parser's own
 * setTimeoutMicros has no effect in this wasm build; a progress callback does.)
 */
export const PARSE_TIMEOUT_MS = 2_000;

async function load(): Promise<BashParser> {
  setFlagsFromString(WASM_FLAGS);
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@vscode/tree-sitter-wasm');
  const ts = require('@vscode/tree-sitter-wasm') as TreeSitterModule;
  await ts.Parser.init();
  const bash = await ts.Language.load(readFileSync(join(dirname(entry), 'tree-sitter-bash.wasm')));
  const parser = new ts.Parser();
  parser.setLanguage(bash);
  return parser;
}

/** The bash parser, loaded on first use and shared by every later call in this process. */
export function bashParser(): Promise<BashParser> {
  loaded ??= load().catch((e: unknown) => {
    loaded = undefined;
    throw e;
  });
  return loaded;
}
