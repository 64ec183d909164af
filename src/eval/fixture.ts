/** A task's fixture repo, copied to a temporary folder and committed afresh for every run. */
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git as runGit } from '../git/run.js';
import type { EvalTask } from './types.js';

const IDENTITY = { name: 'Kiln eval', email: 'eval@kiln.local' };

/** Returns the new repo's path; its parent folder is the caller's to remove. */
export async function makeFixtureRepo(task: EvalTask): Promise<string> {
  const repo = join(await mkdtemp(join(tmpdir(), 'kiln-eval-')), task.name);
  // a fixture keeps its .kiln/ (checks, setup and policy are part of what is evaluated), never run state
  await cp(task.repoDir, repo, { recursive: true, filter: (src) => !/[/\\](\.git|node_modules|\.kiln[/\\](runs|worktrees|verify))$/.test(src) });
  const git = (...args: string[]) => runGit(repo, args, { identity: IDENTITY });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('commit', '-q', '-m', `eval fixture: ${task.name}`);
  return repo;
}
