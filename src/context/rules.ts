import path from 'node:path';
import { capText } from '../tools/outcome.js';
import { entryKind, workspaceTarget, safeReadFile, WorkspacePathError } from '../tools/safe-fs.js';
import { decodeText } from '../tools/text.js';

export const RULE_FILE_NAMES = ['AGENTS.md', 'CLAUDE.md', '.kiln/rules.md'] as const;
export const RULES_MAX_CHARS = 24_000;
export const RULES_MAX_FILE_CHARS = 12_000;

export interface RuleFile {
  /** workspace-relative */
  path: string;
  content: string;
}

/** Directories from the root down to each touched path: the root first, the deepest last. */
function ruleDirs(workspace: string, touchedPaths: readonly string[]): string[] {
  const dirs = new Set<string>(['']);
  for (const p of touchedPaths) {
    let rel: string;
    try {
      rel = workspaceTarget(workspace, p).rel;
      if (entryKind(workspace, rel) !== 'dir') rel = path.posix.dirname(rel);
    } catch {
      continue; // a touched path outside the workspace has no rules to give
    }
    if (rel === '.' || rel === '') continue;
    const parts = rel.split('/');
    for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [...dirs].sort((a, b) => {
    const da = a === '' ? 0 : a.split('/').length;
    const db = b === '' ? 0 : b.split('/').length;
    return da - db || (a < b ? -1 : a > b ? 1 : 0);
  });
}

/** Rule files that exist, ordered so that the nearest to the touched code comes last. */
export function findRuleFiles(workspace: string, touchedPaths: readonly string[] = []): RuleFile[] {
  const found: RuleFile[] = [];
  for (const dir of ruleDirs(workspace, touchedPaths)) {
    for (const name of RULE_FILE_NAMES) {
      const rel = dir === '' ? name : `${dir}/${name}`;
      try {
        const text = decodeText(safeReadFile(workspace, rel, 1024 * 1024).data);
        if (text !== null && text.trim() !== '') found.push({ path: rel, content: text.trim() });
      } catch (e) {
        // Missing is normal; a rules file that is a symlink out of the workspace is ignored, not followed.
        if (!(e instanceof WorkspacePathError)) throw e;
      }
    }
  }
  return found;
}

export interface RulesOptions {
  maxChars?: number;
  maxFileChars?: number;
}

/**
 * AGENTS.md, CLAUDE.md and .kiln/rules.md from the root and from every directory down to
 * the touched paths. Nearer files come later and say so: where two disagree, the nearer wins.
 * Under the size cap the nearest files are kept whole first; the farthest are cut or dropped.
 */
export async function readProjectRules(workspace: string, touchedPaths: readonly string[] = [], opts: RulesOptions = {}): Promise<string> {
  const maxChars = opts.maxChars ?? RULES_MAX_CHARS;
  const maxFileChars = opts.maxFileChars ?? RULES_MAX_FILE_CHARS;
  const files = findRuleFiles(workspace, touchedPaths);
  if (files.length === 0) return '';

  const sections: string[] = new Array<string>(files.length).fill('');
  let remaining = maxChars;
  const dropped: string[] = [];
  for (let i = files.length - 1; i >= 0; i--) {
    const f = files[i]!;
    const header = `### ${f.path}\n`;
    const room = Math.min(maxFileChars, remaining - header.length);
    if (room < 200) {
      dropped.push(f.path);
      continue;
    }
    const body = capText(f.content, room).text;
    sections[i] = header + body;
    remaining -= header.length + body.length + 2;
  }
  const intro =
    files.length > 1 ? 'Project rules, from the repository root down to the code being changed; where they disagree, the later (nearer) file wins.\n\n' : '';
  const note = dropped.length > 0 ? `\n\n[rules not shown for size: ${dropped.reverse().join(', ')}]` : '';
  return intro + sections.filter((s) => s !== '').join('\n\n') + note;
}
