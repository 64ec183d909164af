/**
 * Malformed model output reaching runTool (MockActivityEnvironment, real worktree and policy): a
 * failure of the call is a bounded tool result the model reads, never an activity retry.
 */
import { describe, expect, it } from 'vitest';
import { readStoredResult } from '../../../src/activities/tool-results.js';
import { preparedRun } from '../../helpers/prepared-run.js';

const prepared = () => preparedRun();

describe('runTool with malformed calls', () => {
  it('a 300-character path is a tool result naming ENAMETOOLONG, not a thrown error', async () => {
    const { repo, input, call } = await prepared();
    const res = await call('toolu_long', 'read_file', { path: `${'x'.repeat(300)}.txt` });
    expect(res).toMatchObject({ status: 'done', ok: false });
    const stored = await readStoredResult(repo, input.runId, 'toolu_long');
    expect(stored?.isError).toBe(true);
    expect(stored?.content).toMatch(/ENAMETOOLONG|too long/);
  });

  it('a 5 MB path gives a bounded result and a bounded history summary', async () => {
    const { repo, input, call } = await prepared();
    const res = await call('toolu_huge', 'read_file', { path: 'y'.repeat(5 * 1024 * 1024) });
    expect(res.status === 'done' ? res.ok : false).toBe(false);
    expect(JSON.stringify(res).length).toBeLessThan(4000);
    const stored = await readStoredResult(repo, input.runId, 'toolu_huge');
    expect(stored!.content.length).toBeLessThan(40_000);
  });

  it('control: a normal path still reads the file', async () => {
    const { repo, input, call } = await prepared();
    expect(await call('toolu_ok', 'read_file', { path: 'a.txt' })).toMatchObject({ status: 'done', ok: true });
    expect((await readStoredResult(repo, input.runId, 'toolu_ok'))!.content).toContain('alpha');
  });
});
