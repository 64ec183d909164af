/**
 * The run's messages: the status query, and approvals and a person's decision, each both an
 * Update (the sender learns "accepted" or why not, from the validator) and a Signal of the same
 * name for the Web UI (a refused signal is logged, never thrown); pre-approvals the same way.
 * Handlers only record what arrived; the run and the attempt wait on it with condition().
 */
import { setHandler } from '@temporalio/workflow';
import {
  approveSignal,
  approveUpdate,
  cancelRequestSignal,
  humanSignal,
  humanUpdate,
  preApproveSignal,
  preApproveUpdate,
  startedBySignal,
  statusQuery,
} from '../shared/messages.js';
import type { HumanDecision } from '../shared/types.js';
import type { RunContext } from './context.js';
import { approvalProblem, findApproval, preApprovalProblem } from './machine.js';

export function installHandlers(ctx: RunContext): void {
  const { state } = ctx;
  setHandler(statusQuery, () => ({ ...state, budget: { ...state.budget, wallMs: ctx.elapsedMs() } }));

  setHandler(
    approveUpdate,
    (d) => {
      const counted = findApproval(state, d.approvalId)?.approvals;
      ctx.acceptDecision(d);
      // several people answer these, and only authenticated ones count: the sender learns that, not "approved"
      if (counted)
        return `${d.approve ? 'approval' : 'rejection'} of ${d.approvalId} received: it counts only from an authenticated approver (kiln serve); ${counted.by.length} of ${counted.needed} so far`;
      return `${d.approve ? 'approved' : 'rejected'} ${d.approvalId}`;
    },
    {
      validator: (d) => {
        const problem = approvalProblem(state, ctx.decided, ctx.expired, d);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(approveSignal, (d) => {
    const problem = approvalProblem(state, ctx.decided, ctx.expired, d);
    if (problem) ctx.note('approval', `ignored approval signal: ${problem}`);
    else ctx.acceptDecision(d);
  });

  setHandler(
    preApproveUpdate,
    (p) => {
      const held = ctx.holdPreApproval(p);
      return `${held.id} held: the run approves \`${held.text}\` ${held.scope === 'run' ? 'every time it asks for it' : 'the first time it asks for it'}`;
    },
    {
      validator: (p) => {
        const problem = preApprovalProblem(state, p);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(preApproveSignal, (p) => {
    const problem = preApprovalProblem(state, p);
    if (problem) ctx.note('approval', `ignored pre-approval signal: ${problem}`);
    else ctx.holdPreApproval(p);
  });

  setHandler(
    humanUpdate,
    (d) => {
      ctx.human = d;
      return `${d.action} accepted`;
    },
    {
      validator: (d) => {
        const problem = humanProblem(ctx, d);
        if (problem) throw new Error(problem);
      },
    },
  );
  // anyone may send one; only a start signed for this execution counts (checked by a worker), so a few are kept
  setHandler(startedBySignal, (a) => {
    if (a && typeof a === 'object' && ctx.startClaims.length < MAX_START_CLAIMS) ctx.startClaims.push(a);
  });
  setHandler(cancelRequestSignal, (r) => {
    if (!r || typeof r.by !== 'string') return;
    ctx.cancelRequest = { by: r.by.slice(0, 200), reason: r.reason?.slice(0, 500), via: r.via?.slice(0, 200) };
  });
  setHandler(humanSignal, (d) => {
    const problem = humanProblem(ctx, d);
    if (problem) ctx.note('human', `ignored signal: ${problem}`);
    else ctx.human = d;
  });
}

/** Start claims kept for the worker to check: the genuine one arrives right after the start. */
const MAX_START_CLAIMS = 8;

function humanProblem(ctx: RunContext, d: HumanDecision): string | undefined {
  if (ctx.state.phase !== 'needs_human') return `the run is ${ctx.state.phase}, not waiting for a person`;
  if (!d || !['hint', 'accept', 'abandon'].includes(d.action)) return 'action must be hint, accept or abandon';
  if (d.action === 'hint' && !d.text?.trim()) return 'a hint needs text';
  if (ctx.human) return 'a decision was already sent';
  return undefined;
}
