/**
 * A task's fixture repo, copied to a temporary folder and committed afresh for every run: the
 * task's own files, or a library fetched from its registry (source.ts) with the task's files laid
 * over it and its bug planted by the task's mutations — the committed base is the mutated tree.
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { git as runGit } from '../git/run.js';
import { CliError } from '../shared/errors.js';
import { ensureSource } from './source.js';
import type { EvalTask, Mutation } from './types.js';

const IDENTITY = { name: 'Kiln eval', email: 'eval@kiln.local' };
// a fixture keeps its .kiln/ (checks, setup and policy are part of what is evaluated), never run state
const SKIP = /[/\\](\.git|node_modules|\.kiln[/\\](runs|worktrees|verify))$/;

/** Returns the new repo's path; its parent folder is the caller's to remove. */
export async function makeFixtureRepo(task: EvalTask): Promise<string> {
  const repo = join(await mkdtemp(join(tmpdir(), 'kiln-eval-')), task.name);
  if (task.source) await cp(await ensureSource(task.source), repo, { recursive: true, filter: (src) => !SKIP.test(src) });
  if (task.repoDir && existsSync(task.repoDir)) await cp(task.repoDir, repo, { recursive: true, filter: (src) => !SKIP.test(src) });
  for (const m of task.mutations ?? []) await plant(repo, m, task.name);
  const git = (...args: string[]) => runGit(repo, args, { identity: IDENTITY });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('commit', '-q', '-m', `eval fixture: ${task.name}`);
  return repo;
}

/**
 * Replaces the mutation's text, which must occur exactly once: a text found twice or not at all
 * means the task no longer matches the package it names, and the run would test something else.
 * Its replacement must then occur once too, so that the honest fix is one unambiguous edit.
 */
async function plant(repo: string, m: Mutation, taskName: string): Promise<void> {
  const rel = normalize(m.file);
  if (isAbsolute(rel) || rel === '..' || rel.startsWith(`..${sep}`)) throw new CliError(`${taskName}: mutation file ${m.file} is outside the repo`);
  const file = join(repo, rel);
  if (!existsSync(file)) throw new CliError(`${taskName}: mutation file ${m.file} is not in the fixture`);
  const text = await readFile(file, 'utf8');
  const count = text.split(m.find).length - 1;
  if (count !== 1)
    throw new CliError(`${taskName}: the mutation's text occurs ${count} times in ${m.file} (it must occur once): ${JSON.stringify(m.find.slice(0, 80))}`);
  const planted = text.replace(m.find, () => m.replace);
  const after = planted.split(m.replace).length - 1;
  if (m.replace && after !== 1)
    throw new CliError(
      `${taskName}: the mutation's replacement occurs ${after} times in ${m.file} once planted (it must occur once, so the fix is one edit): ${JSON.stringify(m.replace.slice(0, 80))}`,
    );
  await writeFile(file, planted);
}

/**
 * Fetches every task's library before the first run starts, once each: a registry that cannot be
 * reached or a hash that does not match stops the eval with one line, before any run is scored.
 */
export async function prepareSources(tasks: EvalTask[], log: (s: string) => void): Promise<void> {
  for (const t of tasks) {
    if (!t.source) continue;
    const started = Date.now();
    await ensureSource(t.source);
    const ms = Date.now() - started;
    if (ms > 200) log(`fetched ${t.source.kind} ${t.source.spec} for ${t.name} (${(ms / 1000).toFixed(1)} s)`);
  }
}
