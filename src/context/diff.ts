import { hardenedGit } from '../git/run.js';
import { capText } from '../tools/outcome.js';
import { workspaceRealpath } from '../tools/safe-fs.js';

const DIFF_MAX_CHARS = 200_000;

/**
 * Changes in the worktree against HEAD (staged and unstaged), plus the names of new
 * untracked files: what the agent (or a previous attempt) has done so far. Empty when clean.
 */
export async function currentDiff(workspace: string, maxChars = DIFF_MAX_CHARS): Promise<string> {
  const cwd = workspaceRealpath(workspace);
  const git = await hardenedGit(cwd);
  let diff = await git.result(['diff', 'HEAD', '--no-color', '--']);
  // A repository without commits has no HEAD: everything staged is the change.
  if (diff.exitCode !== 0) diff = await git.result(['diff', '--cached', '--no-color', '--']);
  const untracked = await git.result(['ls-files', '--others', '--exclude-standard', '-z']);
  let out = diff.exitCode === 0 ? diff.stdout.trim() : '';
  const added = untracked.exitCode === 0 ? untracked.stdout.split('\0').filter((f) => f !== '') : [];
  if (added.length > 0) {
    out += `${out ? '\n\n' : ''}New untracked files: ${added.slice(0, 50).join(', ')}${added.length > 50 ? ` (+${added.length - 50} more)` : ''}`;
  }
  return capText(out, maxChars).text;
}
