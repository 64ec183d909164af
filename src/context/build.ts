import { listWorkspaceFiles } from '../tools/list-files.js';
import { workspaceTarget, safeReadFile, WorkspacePathError } from '../tools/safe-fs.js';
import { searchMatches } from '../tools/search.js';
import { decodeText } from '../tools/text.js';
import { currentDiff } from './diff.js';
import { extractKeywords } from './keywords.js';
import { packByPriority, type ContextItem, type PackedItem } from './pack.js';
import { isNoiseFile, rankFiles, type RankedFile } from './rank.js';
import { readProjectRules } from './rules.js';
import { relevantSnippets } from './snippets.js';

export interface BuildContextInput {
  /** absolute worktree path */
  workspace: string;
  goal: string;
  /** files already changed by this run (from earlier turns or attempts) */
  touchedPaths?: string[];
  maxTokens: number;
  /** ranked files to show; default 8 */
  maxFiles?: number;
  /** false when the rules already travel in the system prompt (Kiln's agent): never pay twice */
  includeRules?: boolean;
}

export interface BuiltContext {
  text: string;
  items: PackedItem[];
  tokens: number;
  keywords: string[];
  files: RankedFile[];
}

/*
 * Priorities, highest first. Rules and the current diff are small and always matter;
 * touched files are where the work is; search lines are a cheap map of the rest; ranked
 * files follow in rank order, so a tight budget cuts the weakest candidates first.
 */
export const PRIORITY = { rules: 100, diff: 90, touched: 85, search: 80, fileTop: 75, fileStep: 4, layout: 30 } as const;

const SEARCH_KEYWORDS = 5;
const SEARCH_LINES_PER_KEYWORD = 8;

type SearchHits = Array<{ keyword: string; result: Awaited<ReturnType<typeof searchMatches>> }>;

/** The searches for the first keywords, one after another (the ranking runs its own beside them). */
async function searchHits(workspace: string, keywords: readonly string[]): Promise<SearchHits> {
  const out: SearchHits = [];
  for (const keyword of keywords.slice(0, SEARCH_KEYWORDS))
    out.push({ keyword, result: await searchMatches(workspace, { pattern: keyword, case: 'insensitive', maxCollected: 500 }) });
  return out;
}

/** Search hits outside the files already shown as snippets: a map of the rest of the repo. */
function searchSection(hits: SearchHits, shown: ReadonlySet<string>): string {
  const blocks: string[] = [];
  for (const { keyword: k, result: r } of hits) {
    if (r.error || r.total === 0) continue;
    const files = new Set(r.matches.map((m) => m.path)).size;
    // Lock files and bundles match every name and explain nothing: counted, not shown.
    const lines = r.matches
      .filter((m) => !isNoiseFile(m.path) && !shown.has(m.path))
      .slice(0, SEARCH_LINES_PER_KEYWORD)
      .map((m) => `${m.path}:${m.line}: ${m.text.trim()}`);
    if (lines.length === 0) continue;
    const more = r.total > lines.length ? `\n  (${r.complete ? r.total : `${r.total}+`} matching lines in ${files}${r.complete ? '' : '+'} files)` : '';
    blocks.push(`"${k}":\n${lines.join('\n')}${more}`);
  }
  return blocks.join('\n\n');
}

/** Top-level directories with file counts: enough to know where things live. */
function layoutSection(files: readonly string[]): string {
  const top = new Map<string, number>();
  for (const f of files) {
    const slash = f.indexOf('/');
    const key = slash < 0 ? f : f.slice(0, slash + 1);
    top.set(key, (top.get(key) ?? 0) + 1);
  }
  const entries = [...top.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).slice(0, 60);
  const shown = entries.map(([k, n]) => (k.endsWith('/') ? `${k} (${n} files)` : k));
  return `${files.length} files. Top level: ${shown.join(', ')}${top.size > entries.length ? ', ...' : ''}`;
}

function validTouched(workspace: string, touched: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of touched) {
    try {
      out.push(workspaceTarget(workspace, p).rel);
    } catch {
      // not a workspace path: nothing to show
    }
  }
  return [...new Set(out)];
}

function fileTitle(f: RankedFile): string {
  return f.pairedWith ? `${f.path} (${f.reasons.at(-1) ?? `paired with ${f.pairedWith}`})` : f.path;
}

/** What the model sees at the start of a turn: rules, diff, search hits and ranked snippets, packed under the budget. */
export async function buildContext(input: BuildContextInput): Promise<BuiltContext> {
  const { workspace, goal, maxTokens } = input;
  const touched = validTouched(workspace, input.touchedPaths ?? []);
  const keywords = extractKeywords(goal);
  // the first model request waits for all of this: the searches do not depend on the ranking
  // (only what they show does), so they run beside it, and the file list beside the rules and diff
  const hits = searchHits(workspace, keywords);
  const listed = listWorkspaceFiles(workspace);
  for (const p of [hits, listed]) p.catch(() => undefined);
  const [rules, diff, [allFiles, ranked]] = await Promise.all([
    input.includeRules === false ? Promise.resolve('') : readProjectRules(workspace, touched),
    currentDiff(workspace),
    listed.then(async (files) => [files, await rankFiles(workspace, keywords, { limit: input.maxFiles ?? 8, files })] as const),
  ]);
  const searchText = searchSection(await hits, new Set([...touched, ...ranked.map((f) => f.path)]));

  const items: ContextItem[] = [];
  if (rules) items.push({ kind: 'rule', title: 'Project rules', content: rules, priority: PRIORITY.rules });
  if (diff) items.push({ kind: 'diff', title: 'Current diff (changes so far)', content: diff, priority: PRIORITY.diff });
  for (const p of touched) {
    items.push({ kind: 'file', title: `${p} (changed in this run)`, content: relevantSnippets(workspace, p, keywords), priority: PRIORITY.touched });
  }
  if (searchText)
    items.push({
      kind: 'search',
      title: `Search results for: ${keywords.slice(0, SEARCH_KEYWORDS).join(', ')}`,
      content: searchText,
      priority: PRIORITY.search,
    });
  ranked
    .filter((f) => !touched.includes(f.path))
    .forEach((f, i) => {
      items.push({
        kind: 'file',
        title: fileTitle(f),
        content: relevantSnippets(workspace, f.path, keywords),
        priority: PRIORITY.fileTop - i * PRIORITY.fileStep,
      });
    });
  if (allFiles.length > 0) items.push({ kind: 'layout', title: 'Repository layout', content: layoutSection(allFiles), priority: PRIORITY.layout });

  return { ...packByPriority(items, maxTokens), keywords, files: ranked };
}

/**
 * The baseline: the same rules and candidate files, but each file whole, in rank order,
 * under the same budget. Compared with buildContext it measures what snippets save.
 */
export async function buildNaiveContext(input: BuildContextInput): Promise<BuiltContext> {
  const { workspace, goal, maxTokens } = input;
  const touched = validTouched(workspace, input.touchedPaths ?? []);
  const keywords = extractKeywords(goal);
  const [rules, ranked] = await Promise.all([
    input.includeRules === false ? Promise.resolve('') : readProjectRules(workspace, touched),
    rankFiles(workspace, keywords, { limit: input.maxFiles ?? 8 }),
  ]);
  const items: ContextItem[] = [];
  if (rules) items.push({ kind: 'rule', title: 'Project rules', content: rules, priority: PRIORITY.rules });
  const paths = [...touched, ...ranked.map((f) => f.path).filter((p) => !touched.includes(p))];
  paths.forEach((p, i) => {
    let content: string;
    try {
      content = decodeText(safeReadFile(workspace, p).data) ?? '[binary file]';
    } catch (e) {
      if (!(e instanceof WorkspacePathError)) throw e;
      content = `[${e.message}]`;
    }
    items.push({ kind: 'file', title: p, content, priority: PRIORITY.fileTop - i * PRIORITY.fileStep });
  });
  return { ...packByPriority(items, maxTokens), keywords, files: ranked };
}
