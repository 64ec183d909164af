import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { diffAgainstBase } from '../store/diff.js';
import { stateDir } from '../store/run-files.js';
import { artifactsDir, PATCH_FILE } from '../shared/paths.js';

/** The live diff while the worktree exists, else the patch the run left. */
export async function currentPatch(repo: string, runId: string, worktree?: string, base?: string): Promise<string> {
  if (worktree && base && existsSync(worktree)) return diffAgainstBase(worktree, base, stateDir(repo, runId));
  const file = join(artifactsDir(repo, runId), PATCH_FILE);
  return (await readFile(file, 'utf8').catch(() => '')) || '(no changes)';
}

/** The patch a finished run left in its artifacts, read without a server; undefined when absent. */
export async function finishedPatch(repo: string, runId: string): Promise<string | undefined> {
  const text = await readFile(join(artifactsDir(repo, runId), PATCH_FILE), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : text || '(no changes)';
}
