/**
 * What a run's worktree costs on a big repository (the search benchmark's 50,000 files): Kiln's
 * worktree set-up (prepareWorkspace) against plain `git worktree add`, the per-turn
 * checkpoint — the one-shot diff into a fresh index the finalizer still uses, the kept index
 * the turns use (first, after one changed file, with nothing changed) — against `git status`
 * in the same worktree, and the credential scan before each command (the first, then after a
 * new file). Medians of `runs` (one worktree of each kind: they take seconds).
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { execFileSync } from 'node:child_process';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createActivities, defaultDeps } from '../src/activities/index.js';
import { checkpointDiff, diffAgainstBase } from '../src/store/diff.js';
import { removeWorktree } from '../src/activities/workspace.js';
import type { PrepareResult } from '../src/shared/contracts.js';
import { stateDir } from '../src/store/run-files.js';
import { RACY_MS, sensitiveEntries } from '../src/sandbox/sensitive-files.js';
import { generateRepo } from './search.js';
import { benchRunInput } from './side-by-side.js';
import { round } from './stats.js';

export interface CheckpointFigures {
  files: number;
  runs: number;
  gitWorktreeAddMs: number;
  kilnWorktreeSetupMs: number;
  gitStatusMs: number;
  freshIndexCheckpointMs: number;
  keptIndexFirstMs: number;
  keptIndexOneChangedMs: number;
  keptIndexUnchangedMs: number;
  credentialScanFirstMs: number;
  credentialScanNewFileMs: number;
}

async function median(runs: number, fn: (i: number) => Promise<unknown> | unknown, before?: (i: number) => Promise<unknown> | unknown): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    await before?.(i);
    const t = performance.now();
    await fn(i);
    xs.push(performance.now() - t);
  }
  xs.sort((a, b) => a - b);
  return round(xs[Math.floor(xs.length / 2)]!, 1);
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 30 }).toString();

export async function benchCheckpoint(o: { files: number; runs: number; log: (s: string) => void }): Promise<CheckpointFigures> {
  const repo = path.join(os.tmpdir(), `kiln-bench-search-${o.files}`);
  generateRepo(repo, o.files);
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const plain = path.join(os.tmpdir(), `kiln-bench-plain-wt-${process.pid}`);

  // a worktree of the whole repo costs seconds here: one of each is enough to compare
  const gitWorktreeAddMs = await median(
    1,
    () => git(repo, 'worktree', 'add', '-q', '--detach', plain, base),
    () => {
      rmSync(plain, { recursive: true, force: true });
      git(repo, 'worktree', 'prune');
    },
  );
  rmSync(plain, { recursive: true, force: true });
  git(repo, 'worktree', 'prune');
  o.log(`git worktree add ${gitWorktreeAddMs} ms`);

  // the bench is this worker's operator: set-up is timed without the sandbox's probe, as before
  // `--allow-sandbox-off` was needed for it (no command runs here)
  const acts = createActivities({ ...defaultDeps(), operator: { allowSandboxOff: true } });
  const env = new MockActivityEnvironment();
  let prep: PrepareResult | undefined;
  let runId = '';
  const kilnWorktreeSetupMs = await median(
    1,
    async () => {
      const input = { ...benchRunInput(repo, 'ckpt', 1, 'off'), checks: ['true'] };
      runId = input.runId;
      // as the workflow calls it: the baseline's own checkout of the base goes on beside the first turns (takeBaseline)
      prep = (await env.run(acts.prepareWorkspace, input, undefined, { baselineApart: true })) as PrepareResult;
    },
    async () => {
      if (prep) await removeWorktree(repo, prep.worktree);
    },
  );
  const wt = prep!.worktree;
  const madeAt = Date.now();
  o.log(`kiln worktree set-up ${kilnWorktreeSetupMs} ms`);

  git(wt, 'status', '--porcelain'); // the first one writes the index's stat data
  const gitStatusMs = await median(o.runs, () => git(wt, 'status', '--porcelain'));
  const touch = (i: number) => appendFileSync(path.join(wt, 'pkg00', 'mod00', 'file0.ts'), `// change ${i}\n`);
  const scratch = stateDir(repo, runId);
  const freshIndexCheckpointMs = await median(o.runs, () => diffAgainstBase(wt, base, path.join(scratch, 'fresh')), touch);
  const keptIndexFirstMs = await median(1, () => checkpointDiff(wt, base, scratch));
  const keptIndexOneChangedMs = await median(o.runs, () => checkpointDiff(wt, base, scratch), touch);
  const keptIndexUnchangedMs = await median(o.runs, () => checkpointDiff(wt, base, scratch));
  o.log(
    `git status ${gitStatusMs} ms; checkpoint fresh ${freshIndexCheckpointMs} ms, kept ${keptIndexOneChangedMs} ms (1 changed), ${keptIndexUnchangedMs} ms (unchanged)`,
  );
  // directories changed within RACY_MS of a scan are read again at the next: a run's first
  // command comes after a model turn, seconds after its worktree was made
  await new Promise((r) => setTimeout(r, Math.max(0, madeAt + RACY_MS - Date.now())));
  const credentialScanFirstMs = await median(1, () => sensitiveEntries(wt));
  const credentialScanNewFileMs = await median(
    o.runs,
    () => sensitiveEntries(wt),
    (i) => writeFileSync(path.join(wt, 'pkg00', 'mod00', `new${i}.ts`), 'x'),
  );
  o.log(`credential scan ${credentialScanFirstMs} ms first, ${credentialScanNewFileMs} ms after a new file`);
  await removeWorktree(repo, wt);
  return {
    files: o.files,
    runs: o.runs,
    gitWorktreeAddMs,
    kilnWorktreeSetupMs,
    gitStatusMs,
    freshIndexCheckpointMs,
    keptIndexFirstMs,
    keptIndexOneChangedMs,
    keptIndexUnchangedMs,
    credentialScanFirstMs,
    credentialScanNewFileMs,
  };
}

export function checkpointSection(c: CheckpointFigures, heading: (t: string) => string): string[] {
  const vs = (x: number, ref: number) => `${String(x).padStart(8)} ms  (×${round(x / Math.max(ref, 0.1), 2)})`;
  return [
    heading(`Worktree and checkpoint on a ${c.files}-file repo (checkpoints: median of ${c.runs})`),
    `git worktree add               ${String(c.gitWorktreeAddMs).padStart(8)} ms`,
    `kiln worktree set-up           ${vs(c.kilnWorktreeSetupMs, c.gitWorktreeAddMs)} of git worktree add`,
    `git status                     ${String(c.gitStatusMs).padStart(8)} ms`,
    `checkpoint, fresh index        ${vs(c.freshIndexCheckpointMs, c.gitStatusMs)} of git status   (the old per-turn cost)`,
    `checkpoint, kept index, first  ${vs(c.keptIndexFirstMs, c.gitStatusMs)} of git status`,
    `checkpoint, 1 file changed     ${vs(c.keptIndexOneChangedMs, c.gitStatusMs)} of git status`,
    `checkpoint, nothing changed    ${vs(c.keptIndexUnchangedMs, c.gitStatusMs)} of git status`,
    `credential scan, first         ${vs(c.credentialScanFirstMs, c.gitStatusMs)} of git status   (what every command paid before 19f6a35)`,
    `credential scan, a new file    ${vs(c.credentialScanNewFileMs, c.gitStatusMs)} of git status   (before each command: changed directories only)`,
  ];
}
