/**
 * What the workflow asks of the worktree before a run ships: is it still the tree that was
 * verified, and how large is the patch for the policy's approvals.
 */
import { hardenedGit } from '../git/run.js';
import { judgePatchSize } from '../policy/approvals.js';
import type { PatchJudgement, RunRef } from '../shared/contracts.js';
import { loadRun, stateDir, writeWorkflowEvents } from '../store/run-files.js';
import type { ActivityDeps } from './deps.js';
import { worktreeTree } from './verify-tree.js';

/**
 * The worktree's tree now, built the way verify builds it: the workflow compares it with the
 * verdict's before it calls a run succeeded, so nothing written after the checks ships unverified.
 */
export async function currentTree(deps: Pick<ActivityDeps, 'crash'>, inp: RunRef): Promise<string> {
  deps.crash('current-tree');
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const rec = await loadRun(inp.repo, inp.runId);
  return worktreeTree(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId));
}

/**
 * The run's patch measured against the policy's approvals.patch: the lines it changes between
 * the base and the tree that would ship (the verified one, or the worktree's now).
 */
export async function judgePatch(inp: RunRef & { tree?: string }): Promise<PatchJudgement> {
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const rec = await loadRun(inp.repo, inp.runId);
  const tree = inp.tree ?? (await worktreeTree(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId)));
  const numstat = await (await hardenedGit(rec.worktree)).run(['diff', '--numstat', '--no-renames', rec.baseCommit, tree]);
  let lines = 0;
  let files = 0;
  for (const row of numstat.split('\n').filter(Boolean)) {
    const [added, removed] = row.split('\t');
    files += 1;
    // a binary file shows "-\t-": it changed, but has no lines to count
    lines += added === '-' ? 1 : Number(added) + Number(removed);
  }
  const ask = rec.policy?.approvals ? judgePatchSize(rec.policy, lines) : undefined;
  return {
    tree,
    lines,
    files,
    ...(ask
      ? {
          ask: {
            rule: ask.rule,
            reason: ask.reason,
            needs: { approvers: ask.needs.approvers, authenticated: ask.needs.authenticated, ...(ask.needs.starterCounts ? { starterCounts: true } : {}) },
          },
        }
      : {}),
  };
}
