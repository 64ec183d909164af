/** Where a run keeps its things, relative to the user's repo. Pure string logic: usable in workflow code. */
export function kilnDir(repo: string): string {
  return `${repo.replace(/\/+$/, '')}/.kiln`;
}
export function worktreeDir(repo: string, runId: string): string {
  return `${kilnDir(repo)}/worktrees/${runId}`;
}
export function artifactsDir(repo: string, runId: string): string {
  return `${kilnDir(repo)}/runs/${runId}`;
}
export const PATCH_FILE = 'patch.diff';
