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
import { appendEvent, loadRun, readJson, runDir, stateDir, writeJsonAtomic, writeTextAtomic, writeWorkflowEvents, type RunRecord } from '../store/run-files.js';
import type { ActivityDeps } from './deps.js';
import { isDiskFull } from './disk.js';
import { removeLeftoverCheckouts } from './verify-tree.js';
import { closeKeptSandboxes } from '../sandbox/index.js';
import { removeWorktree } from './workspace.js';

/**
 * A full disk never fails the run's end (measured: five retries on `index.lock … Out of
 * diskspace`, then WorkflowExecutionFailed with no artifacts): the worktree is removed when
 * asked (which frees space), then the artifacts are written again, in the run's directory or,
 * failing that, under the system temp directory; the result says where, or why not.
 */
export async function finalizeRun(deps: Pick<ActivityDeps, 'crash'>, inp: FinalizeInput): Promise<FinalizeResult> {
  deps.crash('finalize');
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
    return await artifactsElsewhere(inp, rec, err);
  }
}

/** The tree whose patch a run keeps whatever the disk: the one it ships, or the one its last verdict passed. */
function verifiedTreeOf(inp: FinalizeInput): string | undefined {
  return inp.verifiedTree ?? (inp.state.verdict?.pass ? inp.state.verdict.modelTree : undefined);
}

/**
 * The disk stays full: the run's state, and its verified patch when it has one, go under the
 * system temp directory. A diff of two stored trees writes nothing, so a verified patch is never
 * lost to a full disk: failing even that, the result names the command that prints it.
 */
async function artifactsElsewhere(inp: FinalizeInput, rec: RunRecord, err: unknown): Promise<FinalizeResult> {
  const elsewhere = join(tmpdir(), 'kiln-artifacts', inp.runId);
  const tree = verifiedTreeOf(inp);
  const patch = tree
    ? await verifiedPatch(rec, tree).then(
        (raw) => redactAsync(raw),
        () => undefined,
      )
    : undefined;
  try {
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, 'state.json'), JSON.stringify(inp.state, null, 2));
    if (patch !== undefined) await writeFile(join(elsewhere, PATCH_FILE), patch);
    const what = patch !== undefined ? "the run's state and its verified patch were" : "the run's state was";
    return {
      patchPath: join(elsewhere, PATCH_FILE),
      diffLines: patch ? countDiffLines(patch) : 0,
      diskNote: `the disk holding ${runDir(inp.repo, inp.runId)} is full: ${what} written to ${elsewhere}${patch === undefined ? ' (no patch)' : ''}`,
    };
  } catch {
    const kept = tree ? `; the verified patch is \`git -C ${rec.input.repo} diff ${rec.baseCommit} ${tree}\`` : '';
    return {
      patchPath: '',
      diffLines: 0,
      diskNote: `the disk is full: no artifacts could be written (${String((err as Error).message).slice(0, 200)})${kept}`,
    };
  }
}

/** The diff from the base to a stored tree (redacted by the fast patterns): it reads objects and writes nothing. */
async function verifiedPatch(rec: RunRecord, tree: string): Promise<string> {
  return redact(await (await hardenedGit(rec.input.repo)).run(['diff', '--binary', '--no-color', rec.baseCommit, tree]));
}

async function finalizeOnce(inp: FinalizeInput): Promise<FinalizeResult> {
  const rec = await loadRun(inp.repo, inp.runId);
  const dir = runDir(inp.repo, inp.runId);
  const patchPath = join(dir, PATCH_FILE);
  let patch = '';
  // the verified tree is in the repo's objects: its patch needs no worktree (a full disk's retry
  // comes after the worktree was removed to free space)
  const verified = inp.verifiedTree && (await verifiedPatch(rec, inp.verifiedTree));
  if (verified !== undefined || existsSync(rec.worktree)) {
    // written once, so it also gets secretlint's rule set on top of the fast patterns
    patch = await redactAsync(verified ?? (await diffAgainstBase(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId))));
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
  // a verification whose worker was killed left its pristine checkout: nothing verifies once the run has ended
  const leftovers = await removeLeftoverCheckouts(rec.input.repo, inp.runId);
  if (leftovers.length) await appendEvent(inp.repo, inp.runId, { type: 'cleanup', removed: leftovers.map((n) => join('.kiln', 'verify', n)) });
  // the run runs no more commands: a worktree kept for a look (a blocked run) keeps no sandbox
  closeKeptSandboxes(rec.worktree);
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
