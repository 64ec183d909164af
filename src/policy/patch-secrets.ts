/**
 * A patch must not carry a secret out of the worktree: a changed file that is sensitive by the
 * policy (an added .env, a key) or a hard link to another file (`ln .env notes.txt` makes a file
 * that looks harmless and holds the .env's bytes) fails verification.
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { PolicyConfig } from './config.js';
import { isSensitivePath } from './globs.js';

export interface PatchFile {
  path: string;
  /** link count of the file in the worktree (absent: deleted, or not a regular file) */
  links?: number;
}

/** Pure: one problem line per offending file. */
export function sensitiveFindings(files: readonly PatchFile[], config?: Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (isSensitivePath(f.path, config)) out.push(`the patch changes a sensitive file: ${f.path}`);
    else if ((f.links ?? 1) > 1) out.push(`the patch adds a hard link (${f.links} names for one file): ${f.path}`);
  }
  return out;
}

/** The changed files of a worktree, judged: sensitive paths and hard links. */
export async function sensitiveInPatch(
  worktree: string,
  changed: readonly string[],
  config?: Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>,
): Promise<string[]> {
  const files = await Promise.all(
    changed.map(async (path): Promise<PatchFile> => {
      const st = await lstat(join(worktree, path)).catch(() => undefined);
      return st?.isFile() ? { path, links: st.nlink } : { path };
    }),
  );
  return sensitiveFindings(files, config);
}
