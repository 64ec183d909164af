/** What a run cancelled by a person leaves behind, as the cancellation tests hold it. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

/** The run was cancelled by alice for "wrong goal": its state, metrics and audit say so, and its worktree is gone. */
export function expectCancelledByAlice(repo: string, runId: string): void {
  const dir = join(repo, '.kiln', 'runs', runId);
  const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { phase: string; reason: string };
  expect(state).toMatchObject({ phase: 'cancelled', reason: 'cancelled by alice: wrong goal' });
  expect(JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')).state).toBe('cancelled');
  expect(readFileSync(join(dir, 'audit.jsonl'), 'utf8')).toMatch(/"kind":"cancel".*"by":"alice".*"note":"wrong goal"/);
  expect(existsSync(join(repo, '.kiln', 'worktrees', runId))).toBe(false);
}
