/*
 * search: ripgrep over the workspace, matches grouped by file. Its name and flags are in
 * catalog.ts; this is the rest of it, and the matcher the context builder uses too.
 */
import { rgPath } from '@vscode/ripgrep';
import readline from 'node:readline';
import { z } from 'zod';
import { judgeGlob, need } from '../policy/judging.js';
import { allow, deny } from '../policy/verdict.js';
import { spawnCommand } from '../process/spawn.js';
import { capText, fail, ok, type ToolOutcome } from './outcome.js';
import { workspaceRealpath } from './safe-fs.js';
import { defineTool } from './spec.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const searchInput = z
  .strictObject({
    pattern: z.string().min(1).describe('Text to find. Literal unless regex is true.'),
    path_glob: z.string().min(1).optional().describe('Only search files matching this glob, e.g. "src/**/*.ts" or "*.py". Prefix with "!" to exclude.'),
    regex: z.boolean().default(false).describe('Treat pattern as a regular expression (Rust regex syntax, like ripgrep). Default false: literal text.'),
    case: z
      .enum(['sensitive', 'insensitive', 'smart'])
      .default('smart')
      .describe('"smart" (default): insensitive unless the pattern has an upper-case letter.'),
  })
  .describe(
    'Search file contents of the workspace (ripgrep; .gitignore respected). Returns matching lines grouped by file with line numbers, ' +
      'at most 200 lines per call; the output says how many were cut. Use this before reading files to find where code lives.',
  );

export type SearchInput = z.output<typeof searchInput>;

export const searchTool = defineTool({
  schema: searchInput,
  judge: (input, ctx) => {
    const pattern = need(input, 'pattern', 'search');
    if (typeof pattern !== 'string') return { verdict: pattern };
    const g = input.path_glob;
    if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'search needs "path_glob" as a string.') };
    const bad = g ? judgeGlob(g, ctx, 'path_glob') : null;
    return { verdict: bad ?? allow('tool.search', 'Searching the repository only reads (results from sensitive files are filtered out).', true) };
  },
  run: async (host, v) => host.result(await search(host.workspace, v)),
  summary: (v) => `search "${v.pattern.slice(0, 60)}"${v.path_glob ? ` in ${v.path_glob}` : ''}`,
});

export const SEARCH_MAX_SHOWN = 200;
/** Past this many matching lines we stop ripgrep: the count is then a lower bound. */
export const SEARCH_MAX_COLLECTED = 20_000;
const SEARCH_MAX_COLUMNS = 300;
const SEARCH_MAX_CHARS = 40_000;
const SEARCH_TIMEOUT_MS = 60_000;

/**
 * Files whose content must not reach the model through a search, whatever policy says
 * about reading them: search output is not checked per file. .gitignore usually hides
 * them already; these globs cover repositories that commit them or forgot to ignore.
 */
export const SECRET_FILE_GLOBS = ['!.env', '!.env.*', '!*.pem', '!*.key', '!id_rsa*', '!id_ed25519*', '!id_ecdsa*', '!.npmrc', '!.netrc', '!.pypirc'];

export interface SearchMatch {
  path: string;
  line: number;
  text: string;
}

export interface SearchResult {
  /** sorted by path, then line */
  matches: SearchMatch[];
  /** matching lines seen (a lower bound when `complete` is false) */
  total: number;
  complete: boolean;
  error?: string;
}

export interface SearchOptions {
  pattern: string;
  regex?: boolean;
  case?: SearchInput['case'];
  path_glob?: string;
  maxCollected?: number;
}

function ripgrepArgs(o: SearchOptions): string[] {
  const args = [
    '--line-number',
    '--with-filename',
    '--no-heading',
    '--null',
    '--color=never',
    '--hidden',
    '--glob=!.git',
    `--max-columns=${SEARCH_MAX_COLUMNS}`,
    '--max-columns-preview',
    '--max-filesize=10M',
  ];
  if (!o.regex) args.push('--fixed-strings');
  const mode = o.case ?? 'smart';
  args.push(mode === 'sensitive' ? '--case-sensitive' : mode === 'insensitive' ? '--ignore-case' : '--smart-case');
  if (o.path_glob) args.push(`--glob=${o.path_glob}`);
  // After path_glob: for ripgrep the last matching glob wins, so "*.env" cannot undo these.
  args.push(...SECRET_FILE_GLOBS.map((g) => `--glob=${g}`));
  // -e keeps a pattern that starts with "-" from being read as a flag.
  args.push('-e', o.pattern, '--', '.');
  return args;
}

/** Matching lines of the workspace, deterministic in order whatever ripgrep's thread timing. */
export async function searchMatches(workspace: string, o: SearchOptions): Promise<SearchResult> {
  const cwd = workspaceRealpath(workspace);
  const limit = o.maxCollected ?? SEARCH_MAX_COLLECTED;
  const sub = spawnCommand(rgPath, ripgrepArgs(o), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    sub.kill('SIGTERM');
  }, SEARCH_TIMEOUT_MS);
  let stderr = '';
  let spawnError: string | undefined;
  sub.stderr!.on('data', (d: Buffer) => {
    // ripgrep's complaint is a line or two; a flood of per-file warnings is not kept whole
    if (stderr.length < 64 * 1024) stderr += d.toString('utf8');
  });
  sub.on('error', (e: Error) => (spawnError = e.message));
  const closed = new Promise<number | null>((resolve) => sub.on('close', (code: number | null) => resolve(code)));
  const matches: SearchMatch[] = [];
  let total = 0;
  let stopped = false;
  const rl = readline.createInterface({ input: sub.stdout!, crlfDelay: Infinity });
  for await (const raw of rl) {
    const nul = raw.indexOf('\0');
    if (nul < 0) continue;
    const rest = raw.slice(nul + 1);
    const colon = rest.indexOf(':');
    const line = Number(rest.slice(0, colon));
    if (colon < 0 || !Number.isInteger(line)) continue;
    if (matches.length >= limit) {
      stopped = true;
      sub.kill('SIGTERM');
      break;
    }
    total++;
    matches.push({ path: raw.slice(0, nul).replace(/^\.\//, ''), line, text: rest.slice(colon + 1) });
  }
  rl.close();
  // what is left unread after a stop is not wanted
  if (stopped) sub.stdout!.resume();
  const exitCode = await closed;
  clearTimeout(timer);
  matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  if (spawnError !== undefined) return { matches, total, complete: false, error: `ripgrep could not be started: ${spawnError}` };
  if (timedOut) return { matches, total, complete: false, error: `search timed out after ${SEARCH_TIMEOUT_MS / 1000}s` };
  if (!stopped && exitCode === 2 && total === 0) {
    const msg = stderr.trim() || 'ripgrep failed';
    return { matches, total, complete: true, error: msg };
  }
  return { matches, total, complete: !stopped };
}

function formatMatches(matches: readonly SearchMatch[]): string {
  const width = Math.max(...matches.map((m) => String(m.line).length));
  const out: string[] = [];
  let current: string | null = null;
  for (const m of matches) {
    if (m.path !== current) {
      if (current !== null) out.push('');
      out.push(m.path);
      current = m.path;
    }
    out.push(`${String(m.line).padStart(width + 2)}: ${m.text}`);
  }
  return out.join('\n');
}

export async function search(
  workspace: string,
  input: Pick<SearchInput, 'pattern'> & Partial<SearchInput>,
  limits: { maxShown?: number } = {},
): Promise<ToolOutcome> {
  const maxShown = limits.maxShown ?? SEARCH_MAX_SHOWN;
  const r = await searchMatches(workspace, input);
  if (r.error) {
    const hint = input.regex ? ' (the pattern is a Rust regex; set regex=false to search literal text)' : '';
    return fail(`search failed: ${r.error}${hint}`);
  }
  const where = input.path_glob ? ` in files matching ${input.path_glob}` : '';
  if (r.total === 0) return ok(`No matches for ${JSON.stringify(input.pattern)}${where}.`);
  const files = new Set(r.matches.map((m) => m.path)).size;
  const shown = r.matches.slice(0, maxShown);
  let body = formatMatches(shown);
  const totalText = r.complete ? String(r.total) : `more than ${r.total}`;
  if (shown.length < r.total) {
    body += `\n\n[showing ${shown.length} of ${totalText} matching lines (${files}${r.complete ? '' : '+'} files); ${r.total - shown.length}${r.complete ? '' : '+'} cut. Narrow with path_glob or a more specific pattern]`;
  } else {
    body += `\n\n[${r.total} matching line${r.total === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}]`;
  }
  const capped = capText(body, SEARCH_MAX_CHARS);
  const full = shown.length < r.matches.length || capped.cut > 0 ? formatMatches(r.matches) : undefined;
  return ok(capped.text, full);
}
