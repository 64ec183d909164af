/*
 * list_files: the files of the workspace as git sees them, filtered by a glob. Its name and flags
 * are in catalog.ts; this is the rest of it, and the listing the context builder uses too.
 */
import { rgPath } from '@vscode/ripgrep';
import { z } from 'zod';
import { hardenedGit } from '../git/run.js';
import { judgeGlob } from '../policy/judging.js';
import { allow, deny } from '../policy/verdict.js';
import { collect } from '../process/collect.js';
import picomatch from 'picomatch';
import { capText, ok, type ToolOutcome } from './outcome.js';
import { workspaceRealpath } from './safe-fs.js';
import { defineTool } from './spec.js';

/** The parser of what the model sends and, as JSON schema, what it is shown (schemas.ts). */
export const listFilesInput = z
  .strictObject({
    glob: z
      .string()
      .min(1)
      .optional()
      .describe('Glob to filter paths, e.g. "src/**/*.ts" or "*.md" (a glob without "/" matches the file name at any depth). Default: all files.'),
  })
  .describe(
    'List the files of the workspace (tracked and untracked, .gitignore respected), sorted, at most 1000 per call. ' +
      'Use a glob to narrow large repositories.',
  );

export type ListFilesInput = z.output<typeof listFilesInput>;

export const listFilesTool = defineTool({
  schema: listFilesInput,
  judge: (input, ctx) => {
    const g = input.glob;
    if (g !== undefined && typeof g !== 'string') return { verdict: deny('input.invalid', 'list_files needs "glob" as a string.') };
    const bad = g ? judgeGlob(g, ctx, 'glob') : null;
    return { verdict: bad ?? allow('tool.list', 'Listing files in the repository only reads (sensitive files are left out).', true) };
  },
  run: async (host, v) => host.result(await listFiles(host.workspace, v)),
  summary: (v) => `list_files ${v.glob ?? ''}`.trim(),
});

export const LIST_MAX_FILES = 1000;
const LIST_MAX_CHARS = 60_000;

function splitNul(out: string): string[] {
  return out.split('\0').filter((s) => s !== '');
}

/**
 * Every file of the workspace that git would consider (tracked + untracked, ignored
 * excluded), sorted. Files deleted in the worktree but still in the index are left out.
 * Outside a git repository, ripgrep's walker applies the same ignore rules.
 */
export async function listWorkspaceFiles(workspace: string): Promise<string[]> {
  const cwd = workspaceRealpath(workspace);
  const g = await hardenedGit(cwd);
  const git = await g.result(['ls-files', '--cached', '--others', '--exclude-standard', '-z']);
  let files: string[];
  if (git.exitCode === 0) {
    const deleted = await g.result(['ls-files', '--deleted', '-z']);
    const gone = new Set(deleted.exitCode === 0 ? splitNul(deleted.stdout) : []);
    files = [...new Set(splitNul(git.stdout))].filter((f) => !gone.has(f));
  } else {
    const rg = await collect(rgPath, ['--files', '--hidden', '--glob', '!.git', '--null'], { cwd, maxBytes: 512 * 1024 * 1024 });
    if (rg.overCap) throw new Error('listing files failed: the file list is over 512 MB');
    if (rg.exitCode !== 0 && rg.exitCode !== 1) {
      throw new Error(`listing files failed: ${rg.error ?? (rg.stderr || git.stderr)}`);
    }
    files = splitNul(rg.stdout).map((f) => f.replace(/^\.\//, ''));
  }
  return files.sort();
}

/** picomatch with ripgrep-like meaning: a glob without "/" matches the file name at any depth. */
export function globMatcher(glob: string): (file: string) => boolean {
  const negate = glob.startsWith('!');
  const g = negate ? glob.slice(1) : glob;
  const isMatch = picomatch(g, { dot: true, basename: !g.includes('/') });
  // Wrapped: picomatch reads a second argument (returnObject), and Array#filter passes an index.
  return negate ? (f) => !isMatch(f) : (f) => isMatch(f);
}

export async function listFiles(workspace: string, input: Partial<ListFilesInput> = {}, limits: { maxFiles?: number } = {}): Promise<ToolOutcome> {
  const maxFiles = limits.maxFiles ?? LIST_MAX_FILES;
  let files = await listWorkspaceFiles(workspace);
  if (input.glob) files = files.filter(globMatcher(input.glob));
  if (files.length === 0) {
    return ok(input.glob ? `No files match ${input.glob}.` : 'The workspace has no files.');
  }
  const shown = files.slice(0, maxFiles);
  let body = shown.join('\n');
  if (files.length > shown.length) {
    body += `\n[showing ${shown.length} of ${files.length} files; narrow the list with a glob such as "src/**/*.ts"]`;
  }
  const capped = capText(body, LIST_MAX_CHARS);
  const full = files.length > shown.length || capped.cut > 0 ? files.join('\n') : undefined;
  return ok(capped.text, full);
}
