/**
 * The run's worktree: created once per run (a retry finds it), set up outside the model's
 * control, and turned into a patch at the end. The user's own checkout is never touched.
 */
import { Context } from '@temporalio/activity';
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { checksFromAgentsMd, KilnConfigError, loadRepoConfig } from '../policy/repo-config.js';
import { redact, redactAsync } from '../redact/index.js';
import { artifactsDir, PATCH_FILE, worktreeDir } from '../shared/paths.js';
import type { RunInput } from '../shared/types.js';
import type { FinalizeInput, FinalizeResult, PrepareResult } from './contracts.js';
import type { ActivityDeps } from './deps.js';
import { git, hardenedGit } from '../git/run.js';
import { heartbeating } from './heartbeat.js';
import {
  appendEvent,
  loadRun,
  readJson,
  runDir,
  saveRun,
  stateDir,
  writeJsonAtomic,
  writeTextAtomic,
  writeWorkflowEvents,
  type RunRecord,
} from './run-files.js';

/** Setup output kept in the blocked reason: enough to see the error, small enough for history. */
const SETUP_TAIL_CHARS = 2000;

export function workspaceActivities(deps: ActivityDeps) {
  /**
   * Makes the run's worktree on this host. With `rebuild`, the host that held it is gone: the
   * worktree is made afresh here from the base commit plus the last checkpoint patch, and the
   * conversation starts over (the workflow tells the model what happened).
   */
  async function prepareWorkspace(input: RunInput, rebuild?: RebuildRequest): Promise<PrepareResult> {
    const repo = resolve(input.repo);
    const common = resolve(repo, (await git(repo, ['rev-parse', '--git-common-dir'])).trim());
    await excludeKilnDir(common);

    const existing = await readJson<RunRecord>(join(stateDir(repo, input.runId), 'run.json'));
    const wt = worktreeDir(repo, input.runId);
    let base = existing?.baseCommit;
    if (!base) {
      try {
        base = (await git(repo, ['rev-parse', '--verify', `${input.base ?? 'HEAD'}^{commit}`])).trim();
      } catch {
        throw new KilnConfigError(`base ${input.base ?? 'HEAD'} is not a commit in ${repo}`);
      }
    }
    if (rebuild) await setAsideLostState(repo, input.runId, wt, rebuild.lostHost);
    if (!(await isWorktree(repo, wt))) {
      await mkdir(dirname(wt), { recursive: true });
      if (existsSync(wt)) await rm(wt, { recursive: true, force: true });
      await git(repo, ['worktree', 'add', '--detach', wt, base]);
    }
    const restored = rebuild ? await applyCheckpoint(wt, rebuild, stateDir(repo, input.runId)) : undefined;

    const config = await loadRepoConfig(repo);
    const checks = input.checks.length ? input.checks : config.checks.length ? config.checks : await agentsMdChecks(wt);
    const rec: RunRecord = {
      input: { ...input, repo },
      worktree: wt,
      baseCommit: base,
      checks,
      hostQueue: deps.hostQueue,
      createdAt: existing?.createdAt ?? new Date().toISOString(),
      linked: config.link.map((rel) => join(repo, rel)),
    };
    await saveRun(rec);
    await mkdir(artifactsDir(repo, input.runId), { recursive: true });

    const result: PrepareResult = { ok: true, worktree: wt, baseCommit: base, checks, hostQueue: deps.hostQueue, ...(restored ? { restored } : {}) };
    if (restored) await appendEvent(repo, input.runId, { type: 'rebuild', lostHost: rebuild!.lostHost, host: deps.hostQueue, ...restored });
    if (existing && (await readJson<{ ok: boolean }>(join(stateDir(repo, input.runId), 'setup.json')))?.ok) return result;

    for (const rel of config.include) {
      const from = join(repo, rel);
      if (existsSync(from)) await cp(from, join(wt, rel), { recursive: true, force: true, verbatimSymlinks: true });
    }
    for (const rel of config.link) {
      const from = join(repo, rel);
      if (existsSync(from) && !existsSync(join(wt, rel))) {
        await mkdir(dirname(join(wt, rel)), { recursive: true });
        await symlink(from, join(wt, rel));
      }
    }

    const setup = input.setup.length ? input.setup : config.setup;
    if (setup.length) {
      const sandbox = await deps.sandbox(input.sandbox);
      const log: string[] = [];
      for (const command of setup) {
        const res = await heartbeating(() =>
          sandbox.run(command, { workspace: wt, timeoutMs: 20 * 60_000, network: true, readOnlyPaths: rec.linked, signal: Context.current().cancellationSignal }),
        );
        const out = redact(res.output);
        log.push(`$ ${command}\n${out}\n[exit ${res.exitCode ?? res.signal}${res.timedOut ? ', timed out' : ''}]`);
        await appendFile(join(runDir(repo, input.runId), 'setup.log'), log[log.length - 1] + '\n');
        if (res.exitCode !== 0) {
          await writeJsonAtomic(join(stateDir(repo, input.runId), 'setup.json'), { ok: false });
          return { ...result, ok: false, reason: `setup command failed: ${command}\n${out.slice(-SETUP_TAIL_CHARS)}` };
        }
      }
      await appendEvent(repo, input.runId, { type: 'setup', commands: setup, ok: true });
    }
    await writeJsonAtomic(join(stateDir(repo, input.runId), 'setup.json'), { ok: true });
    return result;
  }

  /** Patch, metrics and the final state; then the worktree goes when the run no longer needs it. */
  async function finalizeRun(inp: FinalizeInput): Promise<FinalizeResult> {
    const rec = await loadRun(inp.repo, inp.runId);
    const dir = runDir(inp.repo, inp.runId);
    const patchPath = join(dir, PATCH_FILE);
    let patch = '';
    if (existsSync(rec.worktree)) {
      // written once, so it also gets secretlint's rule set on top of the fast patterns
      patch = await redactAsync(await diffAgainstBase(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId)));
      await writeTextAtomic(patchPath, patch);
    } else if (!existsSync(patchPath)) {
      await writeTextAtomic(patchPath, '');
    } else {
      patch = await readFile(patchPath, 'utf8');
    }
    await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
    const s = inp.state;
    const perTurn = await readJson<unknown[]>(join(stateDir(inp.repo, inp.runId), 'turn-metrics.json'));
    await writeJsonAtomic(join(dir, 'metrics.json'), {
      runId: s.runId,
      state: s.phase,
      scripted: s.scripted,
      model: s.model,
      attempts: s.attempt,
      turns: s.turn,
      tokens: { input: s.budget.input, output: s.budget.output, cacheRead: s.budget.cacheRead, cacheWrite: s.budget.cacheWrite },
      costUsd: s.budget.costUsd,
      durationMs: s.budget.wallMs,
      diffLines: countDiffLines(patch),
      touchedFiles: s.touchedFiles,
      perTurn: perTurn ?? [],
    });
    await writeJsonAtomic(join(dir, 'state.json'), s);
    if (!existsSync(join(dir, 'tests.log'))) await writeFile(join(dir, 'tests.log'), '');
    if (!existsSync(join(dir, 'audit.jsonl'))) await writeFile(join(dir, 'audit.jsonl'), '');
    if (inp.removeWorktree) {
      await removeWorktree(inp.repo, rec.worktree);
      // the checkpoint's index is as big as the repo's own: no use once the worktree is gone
      await rm(join(stateDir(inp.repo, inp.runId), `checkpoint-index-${rec.baseCommit}`), { force: true });
    }
    return { patchPath, diffLines: countDiffLines(patch) };
  }

  return { prepareWorkspace, finalizeRun };
}

export interface RebuildRequest {
  /** the host queue that stopped taking work */
  lostHost: string;
  /** the last checkpoint: the worktree's patch against the base (absent: none was taken) */
  patch?: string;
  /** the turn the checkpoint was taken at */
  turn: number;
}

/**
 * What the lost host left on this machine (the same machine when it only looked lost) is set
 * aside: a fresh worktree, a fresh conversation and a fresh setup, as on any other machine.
 */
async function setAsideLostState(repo: string, runId: string, wt: string, lostHost: string): Promise<void> {
  await removeWorktree(repo, wt);
  const state = stateDir(repo, runId);
  const convo = join(state, 'conversation.json');
  if (existsSync(convo)) await rename(convo, join(state, `conversation.lost-${lostHost.replace(/[^\w.-]/g, '_')}-${Date.now()}.json`));
  await rm(join(state, 'setup.json'), { force: true });
}

async function applyCheckpoint(wt: string, r: RebuildRequest, scratch: string): Promise<NonNullable<PrepareResult['restored']>> {
  if (!r.patch) return { applied: false, files: [], turn: r.turn, note: 'no checkpoint had been taken: the worktree is at the base commit' };
  const file = join(scratch, 'checkpoint.patch');
  await writeTextAtomic(file, r.patch);
  const files = [...r.patch.matchAll(/^diff --git a\/(.+?) b\//gm)].map((m) => m[1]!);
  try {
    await git(wt, ['apply', '--binary', '--whitespace=nowarn', file]);
    return { applied: true, files, turn: r.turn };
  } catch (err) {
    // a checkpoint is redacted: a change that touched a secret cannot be restored verbatim
    return { applied: false, files, turn: r.turn, note: `the checkpoint did not apply (${(err as Error).message.split('\n')[0]}); the worktree is at the base commit` };
  }
}

async function excludeKilnDir(commonGitDir: string): Promise<void> {
  const file = join(commonGitDir, 'info', 'exclude');
  const text = await readFile(file, 'utf8').catch(() => '');
  if (text.split(/\r?\n/).some((l) => l.trim() === '.kiln/' || l.trim() === '/.kiln/')) return;
  await mkdir(dirname(file), { recursive: true });
  await appendFile(file, `${text && !text.endsWith('\n') ? '\n' : ''}# Kiln runs and worktrees\n.kiln/\n`);
}

async function isWorktree(repo: string, wt: string): Promise<boolean> {
  if (!existsSync(join(wt, '.git'))) return false;
  const list = await git(repo, ['worktree', 'list', '--porcelain']);
  return list.split('\n').some((l) => l === `worktree ${wt}`);
}

async function agentsMdChecks(wt: string): Promise<string[]> {
  for (const name of ['AGENTS.md', 'CLAUDE.md']) {
    const text = await readFile(join(wt, name), 'utf8').catch(() => undefined);
    if (text) {
      const checks = checksFromAgentsMd(text);
      if (checks.length) return checks;
    }
  }
  return [];
}

/**
 * Runs git against a throwaway index holding the base plus every worktree change (new files
 * included), so the worktree's own index is never disturbed.
 */
async function againstBase<T>(worktree: string, base: string, scratchDir: string, fn: (g: (args: readonly string[]) => Promise<string>) => Promise<T>): Promise<T> {
  await mkdir(scratchDir, { recursive: true });
  const index = join(scratchDir, `index-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  try {
    const g = (await hardenedGit(worktree, { indexFile: index })).run;
    await g(['read-tree', base]);
    await g(['add', '-A', '--', '.']);
    return await fn(g);
  } finally {
    await rm(index, { force: true });
  }
}

/**
 * The per-turn checkpoint: the same patch as diffAgainstBase, at a cost that follows the changed
 * files rather than the repo. Its index is kept in the run's state dir across turns, so `add -A`
 * re-hashes only files whose stat changed (a fresh index re-hashes every file: 636–745 ms on a
 * 50,000-file repo); when the resulting tree is the one the last checkpoint saw, its patch is
 * reused without a diff. Only the checkpoint uses this index: `kiln diff` and the finalizer may
 * run beside it and keep their throwaway ones, so no two gits share an index.lock.
 */
export async function checkpointDiff(worktree: string, base: string, scratchDir: string): Promise<{ patch: string; reused: boolean }> {
  await mkdir(scratchDir, { recursive: true });
  const index = join(scratchDir, `checkpoint-index-${base}`);
  const memo = join(scratchDir, 'checkpoint-last.json');
  const g = (await hardenedGit(worktree, { indexFile: index })).run;
  if (!existsSync(index)) await g(['read-tree', base]);
  await g(['add', '-A', '--', '.']);
  const tree = (await g(['write-tree'])).trim();
  const last = await readJson<{ base: string; tree: string; patch: string }>(memo);
  if (last && last.base === base && last.tree === tree) return { patch: last.patch, reused: true };
  const patch = redact(await g(['diff', '--cached', '--binary', '--no-color', base]));
  await writeJsonAtomic(memo, { base, tree, patch });
  return { patch, reused: false };
}

/** The worktree's changes against the base, as a patch that applies with `git apply`. */
export async function diffAgainstBase(worktree: string, base: string, scratchDir: string): Promise<string> {
  return againstBase(worktree, base, scratchDir, async (g) => redact(await g(['diff', '--cached', '--binary', '--no-color', base])));
}

export async function changedFiles(worktree: string, base: string, scratchDir: string): Promise<string[]> {
  return againstBase(worktree, base, scratchDir, async (g) =>
    (await g(['diff', '--cached', '--name-only', '--no-renames', base])).split('\n').filter(Boolean),
  );
}

export async function removeWorktree(repo: string, wt: string): Promise<void> {
  if (existsSync(wt)) {
    try {
      await git(repo, ['worktree', 'remove', '--force', '--force', wt]);
    } catch {
      await rm(wt, { recursive: true, force: true });
    }
  }
  await git(repo, ['worktree', 'prune']).catch(() => undefined);
}

function countDiffLines(patch: string): number {
  return patch.split('\n').filter((l) => (l.startsWith('+') || l.startsWith('-')) && !l.startsWith('+++') && !l.startsWith('---')).length;
}

