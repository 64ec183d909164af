import { rgPath } from '@vscode/ripgrep';
import path from 'node:path';
import { collect } from '../process/collect.js';
import { listWorkspaceFiles } from '../tools/list-files.js';
import { workspaceRealpath } from '../tools/safe-fs.js';
import { SECRET_FILE_GLOBS } from '../tools/search.js';
import { keywordWeight, splitIdentifier } from './keywords.js';

export interface RankedFile {
  /** workspace-relative */
  path: string;
  score: number;
  /** matching lines per keyword */
  hits: Record<string, number>;
  /** why it ranked, for logs and the context item title */
  reasons: string[];
  /** set when the file is here as the test (or source) of another ranked file */
  pairedWith?: string;
}

export interface RankOptions {
  /** how many files to return; default 8 */
  limit?: number;
  /** the workspace's file list, when the caller already has it */
  files?: readonly string[];
  /** ripgrep runs at once; default 2 (the machines this runs on are small) */
  concurrency?: number;
}

/** Matching-line counts per file for one literal keyword, case-insensitive. */
export async function countMatches(workspace: string, keyword: string): Promise<Map<string, number>> {
  const res = await collect(
    rgPath,
    [
      '--count',
      '--null',
      '--fixed-strings',
      '--ignore-case',
      '--hidden',
      '--glob=!.git',
      '--max-filesize=2M',
      ...SECRET_FILE_GLOBS.map((g) => `--glob=${g}`),
      '-e',
      keyword,
      '--',
      '.',
    ],
    { cwd: workspaceRealpath(workspace), maxBytes: 256 * 1024 * 1024, timeoutMs: 60_000 },
  );
  const counts = new Map<string, number>();
  for (const line of res.stdout.split('\n')) {
    const nul = line.indexOf('\0');
    if (nul < 0) continue;
    const n = Number(line.slice(nul + 1));
    if (Number.isFinite(n) && n > 0) counts.set(line.slice(0, nul).replace(/^\.\//, ''), n);
  }
  return counts;
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9\u0080-\uffff]/g, '');

/** Generated or bulky files that match everything and explain nothing. */
const NOISE =
  /(^|\/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml|Cargo\.lock|poetry\.lock|go\.sum|composer\.lock)$|\.(min\.js|map|snap|svg|lock)$|(^|\/)(dist|build|vendor|node_modules|__snapshots__)\//;

export function isNoiseFile(p: string): boolean {
  return NOISE.test(p);
}

const TEST_MARK = /(^|\/)(tests?|__tests__|spec)\/|\.(test|spec)\.[^.]+$|_test\.[^.]+$|(^|\/)test_[^/]+$/;

export function isTestFile(p: string): boolean {
  return TEST_MARK.test(p);
}

/** "src/auth/login.ts", "tests/auth/login.test.ts", "test_login.py" → "login". */
export function fileStem(p: string): string {
  const base = path.posix.basename(p);
  return base
    .replace(/\.(test|spec)(?=\.[^.]+$)/, '')
    .replace(/_test(?=\.[^.]+$)/, '')
    .replace(/^test_/, '')
    .replace(/\.[^.]+$/, '')
    .toLowerCase();
}

/** Sources and their tests: same stem, one a test file and the other not. */
function partners(file: string, byStem: Map<string, string[]>): string[] {
  const test = isTestFile(file);
  const same = (byStem.get(fileStem(file)) ?? []).filter((f) => f !== file && isTestFile(f) !== test);
  // Prefer partners sharing more of the directory path (src/auth/x.ts ↔ tests/auth/x.test.ts).
  const dirParts = new Set(path.posix.dirname(file).split('/'));
  const shared = (f: string) =>
    path.posix
      .dirname(f)
      .split('/')
      .filter((d) => dirParts.has(d)).length;
  return same.sort((a, b) => shared(b) - shared(a) || (a < b ? -1 : 1)).slice(0, 1);
}

/**
 * Files most likely to matter for the keywords: content hits weighted by keyword shape and
 * rarity (a keyword found in every file tells nothing), bonus for files hitting several
 * keywords, bonus for path names that contain a keyword, then each top source pulls in its
 * test and each top test its source.
 */
export async function rankFiles(workspace: string, keywords: readonly string[], opts: RankOptions = {}): Promise<RankedFile[]> {
  const limit = opts.limit ?? 8;
  if (keywords.length === 0) return [];
  const files = opts.files ?? (await listWorkspaceFiles(workspace));
  const known = new Set(files);
  const n = Math.max(files.length, 1);
  const counts = await mapLimit(keywords, opts.concurrency ?? 2, (k) => countMatches(workspace, k));

  const table = new Map<string, RankedFile>();
  const entry = (p: string) => {
    let e = table.get(p);
    if (!e) {
      e = { path: p, score: 0, hits: {}, reasons: [] };
      table.set(p, e);
    }
    return e;
  };
  const distinct = new Map<string, number>();
  const squashed = files.map((p) => ({ p, stem: squash(fileStem(p)), full: squash(p) }));

  keywords.forEach((k, i) => {
    const c = counts[i]!;
    const idf = Math.log(1 + n / (1 + c.size));
    const w = keywordWeight(k) * idf;
    for (const [p, count] of c) {
      if (!known.has(p)) continue; // ripgrep and git may disagree on ignores; git's list wins
      const e = entry(p);
      e.hits[k] = count;
      e.score += w * (1 + Math.log(count));
      distinct.set(p, (distinct.get(p) ?? 0) + 1);
    }
    const needle = squash(k);
    if (needle.length < 3) return;
    const parts = k.includes('/') ? [] : splitIdentifier(k).filter((s) => s.length >= 3);
    for (const { p, stem, full } of squashed) {
      let bonus = 0;
      if (k.includes('/') && (p === k || p.endsWith('/' + k))) bonus = 4;
      else if (stem === needle) bonus = 3;
      else if (stem.includes(needle) || (needle.length >= 5 && needle.includes(stem) && stem.length >= 4)) bonus = 2;
      else if (full.includes(needle)) bonus = 1;
      else if (parts.length > 1 && parts.every((s) => full.includes(s))) bonus = 1;
      if (bonus === 0) continue;
      const e = entry(p);
      e.score += bonus * w;
      e.reasons.push(`path matches "${k}"`);
    }
  });

  for (const e of table.values()) {
    const d = distinct.get(e.path) ?? 0;
    if (d > 1) e.score *= 1 + 0.5 * (d - 1);
    if (NOISE.test(e.path)) e.score *= 0.1;
    const hit = Object.entries(e.hits);
    if (hit.length > 0) e.reasons.unshift(hit.map(([k, c]) => `${c}×"${k}"`).join(', '));
  }

  const ranked = [...table.values()].filter((e) => e.score > 0).sort(byScore);
  const top = ranked.slice(0, limit);
  const byStem = new Map<string, string[]>();
  for (const f of files) {
    const s = fileStem(f);
    const list = byStem.get(s);
    if (list) list.push(f);
    else byStem.set(s, [f]);
  }
  // A test and its source explain each other: pull the partner of a top file up just
  // behind it, unless the partner already ranks higher on its own.
  for (const e of top.slice()) {
    for (const p of partners(e.path, byStem)) {
      const partnerScore = e.score * 0.6;
      const existing = table.get(p);
      if (existing && existing.score >= partnerScore) continue;
      const pe = existing ?? entry(p);
      pe.score = partnerScore;
      pe.pairedWith = e.path;
      pe.reasons.push(`${isTestFile(p) ? 'test of' : 'source of'} ${e.path}`);
    }
  }
  return [...table.values()]
    .filter((e) => e.score > 0)
    .sort(byScore)
    .slice(0, limit)
    .map(round);
}

function byScore(a: RankedFile, b: RankedFile): number {
  return b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

function round(e: RankedFile): RankedFile {
  return { ...e, score: Math.round(e.score * 100) / 100 };
}
