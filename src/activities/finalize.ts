/**
 * finalizeRun: the run's artifacts (the patch, metrics, state) written at its end, and its
 * worktree removed when asked; a full disk still leaves what it can.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropRunCache } from '../checks/caches.js';
import { hardenedGit } from '../git/run.js';
import { redact, redactAsync } from '../redact/index.js';
import type { FinalizeInput, FinalizeResult } from '../shared/contracts.js';
import { PATCH_FILE } from '../shared/paths.js';
import { diffAgainstBase } from '../store/diff.js';
import { loadRun, readJson, runDir, stateDir, writeJsonAtomic, writeTextAtomic, writeWorkflowEvents } from '../store/run-files.js';
import { isDiskFull } from './disk.js';
import { removeWorktree } from './workspace.js';

/**
 * A full disk never fails the run's end (measured: five retries on `index.lock … Out of
 * diskspace`, then WorkflowExecutionFailed with no artifacts): the worktree is removed when
 * asked (which frees space), then the artifacts are written again, in the run's directory or,
 * failing that, under the system temp directory; the result says where, or why not.
 */
export async function finalizeRun(inp: FinalizeInput): Promise<FinalizeResult> {
  try {
    return await finalizeOnce(inp);
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    const rec = await loadRun(inp.repo, inp.runId);
    if (inp.removeWorktree) await removeWorktree(inp.repo, rec.worktree).catch(() => rm(rec.worktree, { recursive: true, force: true }));
    try {
      return {
        ...(await finalizeOnce({ ...inp, removeWorktree: false })),
        diskNote: 'the disk was full; the artifacts were written after the worktree was removed',
      };
    } catch (again) {
      if (!isDiskFull(again)) throw again;
    }
    const elsewhere = join(tmpdir(), 'kiln-artifacts', inp.runId);
    try {
      await mkdir(elsewhere, { recursive: true });
      await writeFile(join(elsewhere, 'state.json'), JSON.stringify(inp.state, null, 2));
      return {
        patchPath: join(elsewhere, PATCH_FILE),
        diffLines: 0,
        diskNote: `the disk holding ${runDir(inp.repo, inp.runId)} is full: the run's state was written to ${elsewhere} (no patch)`,
      };
    } catch {
      return { patchPath: '', diffLines: 0, diskNote: `the disk is full: no artifacts could be written (${String((err as Error).message).slice(0, 200)})` };
    }
  }
}

async function finalizeOnce(inp: FinalizeInput): Promise<FinalizeResult> {
  const rec = await loadRun(inp.repo, inp.runId);
  const dir = runDir(inp.repo, inp.runId);
  const patchPath = join(dir, PATCH_FILE);
  let patch = '';
  if (existsSync(rec.worktree)) {
    // written once, so it also gets secretlint's rule set on top of the fast patterns
    const raw = inp.verifiedTree
      ? redact(await (await hardenedGit(rec.worktree)).run(['diff', '--binary', '--no-color', rec.baseCommit, inp.verifiedTree]))
      : await diffAgainstBase(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId));
    patch = await redactAsync(raw);
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
    await dropRunCache(inp.repo, inp.runId);
    // the checkpoint's index is as big as the repo's own: no use once the worktree is gone
    await rm(join(stateDir(inp.repo, inp.runId), `checkpoint-index-${rec.baseCommit}`), { force: true });
  }
  return { patchPath, diffLines: countDiffLines(patch) };
}

function countDiffLines(patch: string): number {
  return patch.split('\n').filter((l) => (l.startsWith('+') || l.startsWith('-')) && !l.startsWith('+++') && !l.startsWith('---')).length;
}
