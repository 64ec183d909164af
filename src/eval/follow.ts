/**
 * Following one eval run to its end while standing in for the person: every approval is
 * approved and every needs_human answered with `abandon`, the run's own and, for parallel
 * attempts, each child's (a child asks under its own id).
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Embedded } from '../embedded.js';
import { isClosed, readState, sendApproval, sendHuman } from '../client/runs.js';
import type { RunState } from '../shared/types.js';
import type { Observed } from './types.js';

export const EVAL_BY = 'kiln eval';
const POLL_MS = 300;

type RunHandle = Parameters<typeof readState>[0];

/** Polls until the run closes or the deadline passes (it is then cancelled); returns the children's run ids. */
export async function followRun(
  env: Embedded,
  handle: RunHandle,
  o: { label: string; deadline: number; started: number; observed: Observed; log: (s: string) => void },
): Promise<string[]> {
  const children = new Set<string>();
  const abandoned = new Set<string>();
  for (;;) {
    const st = await readState(handle);
    if (st) {
      for (const c of st.children ?? []) children.add(c.runId);
      await answer(env, handle, st, undefined, o, abandoned);
      for (const id of st.children?.length && !isEnded(st) ? st.children.map((c) => c.runId) : []) {
        const child = env.client.workflow.getHandle(id) as RunHandle;
        const cs = await readState(child);
        if (cs && !isEnded(cs)) await answer(env, child, cs, id, o, abandoned);
      }
    }
    if (await isClosed(handle as WorkflowHandle)) break;
    if (Date.now() > o.deadline) {
      o.observed.error = `the eval gave up waiting after ${Math.round((Date.now() - o.started) / 1000)} s; run cancelled`;
      await handle.cancel().catch(() => undefined);
      break;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return [...children];
}

function isEnded(st: RunState): boolean {
  return st.phase === 'succeeded' || st.phase === 'blocked' || st.phase === 'cancelled';
}

async function answer(
  env: Embedded,
  handle: RunHandle,
  st: RunState,
  /** the child's run id when it is a child of parallel attempts */
  child: string | undefined,
  o: { label: string; observed: Observed; log: (s: string) => void },
  abandoned: Set<string>,
): Promise<void> {
  const { label, observed } = o;
  // a child's approval ids are its own: the run's list names the child
  const own = child ? `${child}:` : '';
  const runId = child ?? handle.workflowId;
  for (const a of st.pendingApprovals) {
    const key = `${own}${a.id}`;
    if (observed.autoApproved.includes(key)) continue;
    observed.autoApproved.push(key);
    o.log(`  ✋ ${label}: auto-approving ${key} (${a.summary})`);
    await sendApproval(env.client, handle, { approvalId: a.id, approve: true, by: EVAL_BY, note: 'auto-approved by kiln eval' }).catch((err) =>
      o.log(`  ✋ ${label}: ${key} not applied: ${(err as Error).message}`),
    );
  }
  if (st.phase === 'needs_human' && !abandoned.has(runId)) {
    abandoned.add(runId);
    observed.needsHumanReasons.push(st.reason ?? '');
    observed.humanAction = 'abandon';
    o.log(`  👤 ${label}${own ? ` (${runId})` : ''}: needs a person (${(st.reason ?? '').split('\n')[0]!.slice(0, 120)}) → abandon`);
    await sendHuman(env.client, handle, { action: 'abandon', by: EVAL_BY, text: 'the eval never waits for a person' }).catch((err) =>
      o.log(`  👤 ${label}: abandon not applied: ${(err as Error).message}`),
    );
  }
}
