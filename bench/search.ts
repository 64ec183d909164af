/**
 * How fast is the search tool on a big repository, next to `git grep`?
 *
 * Generates a deterministic repository of `files` files under /tmp (reused across runs
 * when its parameters match), commits it, then times our `search` (ripgrep + parsing +
 * formatting for the model) and `git grep` on the same patterns: median of `runs` after
 * one warm-up each, so both read from the page cache.
 *
 *   node dist/bench/search.js [--files 50000] [--runs 5] [--dir /tmp/kiln-bench-search]
 */
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { search } from '../src/tools/search.js';

export interface BenchPattern {
  label: string;
  pattern: string;
  regex: boolean;
  case: 'sensitive' | 'insensitive' | 'smart';
}

export interface BenchSearchOptions {
  /** where the generated repository lives; default /tmp/kiln-bench-search-<files> */
  dir?: string;
  files?: number;
  runs?: number;
  patterns?: BenchPattern[];
  log?: (line: string) => void;
}

export interface BenchSearchRow {
  label: string;
  pattern: string;
  oursMs: number;
  gitGrepMs: number;
  /** oursMs / gitGrepMs: below 1 means we are faster */
  ratio: number;
  /** matching lines each tool reported (ours may say "more than") */
  oursSummary: string;
  gitGrepLines: number;
}

export interface BenchSearchResult {
  dir: string;
  files: number;
  bytes: number;
  /** 0 when an existing repository was reused */
  setupMs: number;
  runs: number;
  rows: BenchSearchRow[];
}

export const DEFAULT_PATTERNS: BenchPattern[] = [
  { label: 'rare literal', pattern: 'kilnNeedle_4242', regex: false, case: 'smart' },
  { label: 'common identifier', pattern: 'handleRequest', regex: false, case: 'sensitive' },
  { label: 'regex', pattern: 'fetch[A-Z][a-z]+Async\\(', regex: true, case: 'sensitive' },
  { label: 'case-insensitive', pattern: 'todo: remove', regex: false, case: 'insensitive' },
  { label: 'no match', pattern: 'zz_not_anywhere_zz', regex: false, case: 'smart' },
];

/** mulberry32: a tiny seeded PRNG, so every run generates the same repository. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['user', 'order', 'session', 'cache', 'item', 'price', 'token', 'config', 'event', 'queue', 'record', 'report'];
const VERBS = ['fetch', 'load', 'save', 'update', 'parse', 'render', 'validate', 'merge'];
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);

function fileContent(i: number, rnd: () => number): string {
  const pick = <T>(a: readonly T[]) => a[Math.floor(rnd() * a.length)]!;
  const lines: string[] = [`// module ${i}`, `import { ${pick(WORDS)}Store } from '../lib/${pick(WORDS)}';`, ''];
  const fns = 2 + Math.floor(rnd() * 4);
  for (let f = 0; f < fns; f++) {
    const verb = pick(VERBS);
    const noun = cap(pick(WORDS));
    const async = rnd() < 0.3 ? 'Async' : '';
    lines.push(`export async function ${verb}${noun}${async}(id: number) {`);
    if (rnd() < 0.2) lines.push('  // TODO: remove this fallback once the migration is done');
    if (rnd() < 0.25) lines.push(`  const res = await handleRequest('${pick(WORDS)}', id);`);
    lines.push(`  const value = ${Math.floor(rnd() * 100000)} + id * ${Math.floor(rnd() * 97)};`);
    lines.push(`  return { id, value, kind: '${pick(WORDS)}' };`, '}', '');
  }
  if (i % 10007 === 4242 % 10007) lines.push('export const kilnNeedle_4242 = true;');
  return lines.join('\n');
}

function git(cwd: string, args: string[]): void {
  execFileSync('git', args, {
    cwd,
    stdio: 'ignore',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.com',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.com',
    },
  });
}

/** Create (or reuse) the repository; returns its size and how long creating it took. */
export function generateRepo(dir: string, files: number): { bytes: number; setupMs: number } {
  const marker = path.join(dir, '.git', 'kiln-bench.json');
  const params = JSON.stringify({ files, version: 1 });
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === params) {
    const bytes = Number(JSON.parse(fs.readFileSync(marker + '.size', 'utf8')));
    return { bytes, setupMs: 0 };
  }
  const t0 = performance.now();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const rnd = prng(42);
  let bytes = 0;
  for (let i = 0; i < files; i++) {
    // 50 packages × 20 modules: directories of ~50 files, like a real monorepo.
    const rel = path.join(`pkg${String(i % 50).padStart(2, '0')}`, `mod${String(Math.floor(i / 50) % 20).padStart(2, '0')}`, `file${i}.ts`);
    const abs = path.join(dir, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    const content = fileContent(i, rnd);
    bytes += content.length;
    fs.writeFileSync(abs, content);
  }
  fs.writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n');
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'bench fixture']);
  fs.writeFileSync(marker + '.size', String(bytes));
  fs.writeFileSync(marker, params);
  return { bytes, setupMs: Math.round(performance.now() - t0) };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function timeIt<T>(runs: number, fn: () => Promise<T>): Promise<{ ms: number; last: T }> {
  let last = await fn(); // warm-up: page cache, ripgrep binary, JIT
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    last = await fn();
    times.push(performance.now() - t0);
  }
  return { ms: Math.round(median(times) * 10) / 10, last };
}

function gitGrepArgs(p: BenchPattern): string[] {
  const args = ['grep', '-n', '--no-color', '-I'];
  args.push(p.regex ? '-E' : '-F');
  if (p.case === 'insensitive' || (p.case === 'smart' && p.pattern === p.pattern.toLowerCase())) args.push('-i');
  // --untracked: search the worktree files as our tool does, not only the index.
  args.push('--untracked', '-e', p.pattern);
  return args;
}

export async function benchSearch(opts: BenchSearchOptions = {}): Promise<BenchSearchResult> {
  const files = opts.files ?? 50_000;
  const runs = opts.runs ?? 5;
  const dir = opts.dir ?? path.join(os.tmpdir(), `kiln-bench-search-${files}`);
  const log = opts.log ?? (() => {});
  log(`repository: ${dir} (${files} files)`);
  const { bytes, setupMs } = generateRepo(dir, files);
  log(setupMs ? `generated and committed in ${(setupMs / 1000).toFixed(1)}s` : 'reused the existing repository');

  const rows: BenchSearchRow[] = [];
  for (const p of opts.patterns ?? DEFAULT_PATTERNS) {
    const ours = await timeIt(runs, () => search(dir, { pattern: p.pattern, regex: p.regex, case: p.case }));
    const theirs = await timeIt(runs, () => execa('git', gitGrepArgs(p), { cwd: dir, reject: false, stdin: 'ignore', maxBuffer: 1024 * 1024 * 1024 }));
    const summary = ours.last.content.match(/\[(showing \d+ of [^\]]*?matching lines|\d+ matching lines? in \d+ files?|No matches)/);
    const row: BenchSearchRow = {
      label: p.label,
      pattern: p.pattern,
      oursMs: ours.ms,
      gitGrepMs: theirs.ms,
      ratio: Math.round((ours.ms / Math.max(theirs.ms, 0.1)) * 100) / 100,
      oursSummary: summary?.[1] ?? (ours.last.content.startsWith('No matches') ? 'no matches' : ours.last.content.slice(0, 60)),
      gitGrepLines: theirs.last.stdout === '' ? 0 : theirs.last.stdout.split('\n').length,
    };
    rows.push(row);
    log(
      `${row.label.padEnd(18)} ours ${String(row.oursMs).padStart(7)} ms   git grep ${String(row.gitGrepMs).padStart(7)} ms   ratio ${row.ratio.toFixed(2)}   (${row.gitGrepLines} lines by git grep; ours: ${row.oursSummary})`,
    );
  }
  return { dir, files, bytes, setupMs, runs, rows };
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const files = Number(argValue('--files') ?? 50_000);
  const runs = Number(argValue('--runs') ?? 5);
  const dir = argValue('--dir');
  const result = await benchSearch({ files, runs, ...(dir ? { dir } : {}), log: (l) => console.log(l) });
  const ratios = result.rows.map((r) => r.ratio);
  console.log(`median ratio ours/git grep: ${median(ratios).toFixed(2)} (below 1: faster than git grep)`);
}
