/**
 * How a call the policy asks about gets its answer: a pre-approval for exactly that command
 * answers it at once; otherwise a person decides, and a decision signed by `kiln serve` is checked by a worker (never here: no crypto in workflow
 * code) before it counts as authenticated. A call the policy's approvals section governs waits
 * for enough different authenticated approvers; a rejection by any of them rejects it.
 */
import { condition, workflowInfo } from '@temporalio/workflow';
import type { RunToolResult, ToolCallView } from '../shared/contracts.js';
import { identifyApprover, type ApproverIdentity } from '../shared/approver.js';
import type { ApprovalDecision, HeldPreApproval, PendingApproval } from '../shared/types.js';
import type { RunContext } from './context.js';
import { shared } from './options.js';
import { approvalEnded, approvalRequested } from './metrics.js';

type Ask = Extract<RunToolResult, { status: 'ask' }>;

export type Answer =
  | { kind: 'timeout'; approvalId: string }
  | {
      kind: 'decided';
      approvalId: string;
      approve: boolean;
      /** who answered, one name or several joined */
      by: string;
      approvers: string[];
      scope: 'once' | 'run';
      reason?: string;
      hash?: string;
      grantKey?: string;
    };

/** The request a person sees for a call the policy asks about; the workflow clock, so replay gives the same times. */
function pendingFor(id: string, call: ToolCallView, res: Ask, timeoutMs: number): PendingApproval {
  const requested = new Date();
  return {
    id,
    toolUseId: call.id,
    tool: call.name,
    summary: res.summary,
    segments: res.segments,
    ...(res.preview !== undefined ? { preview: res.preview } : {}),
    rule: res.rule,
    reason: res.reason,
    grantKey: res.grantKey,
    hash: res.hash,
    requestedAt: requested.toISOString(),
    expiresAt: new Date(requested.getTime() + timeoutMs).toISOString(),
  };
}

export async function askPeople(
  ctx: RunContext,
  call: ToolCallView,
  res: Ask,
  phase: 'awaiting_approval' | 'awaiting_budget' = 'awaiting_approval',
): Promise<Answer> {
  const { state, input } = ctx;
  await ctx.auditPreApprovals();
  const id = `ap-${++ctx.approvalSeq}`;
  // a pre-approval is one person's word ahead of time: it never answers a call that needs more
  const preApprovable = res.needs ? undefined : res.exact;
  const early = ctx.preApprovalFor(preApprovable);
  if (early) return usePreApproval(ctx, id, early, res);

  const pending: PendingApproval = {
    ...pendingFor(id, call, res, input.approvalTimeoutMs),
    ...(res.needs
      ? {
          approvals: {
            needed: res.needs.approvers,
            authenticated: res.needs.authenticated,
            by: [],
            ...(res.needs.starterCounts ? { starterCounts: true } : {}),
          },
        }
      : {}),
  };
  state.pendingApprovals.push(pending);
  const needs = res.needs
    ? ` (needs ${res.needs.approvers > 1 ? `${res.needs.approvers} different` : 'an'} authenticated approver${res.needs.approvers > 1 ? 's' : ''})`
    : '';
  ctx.phase(phase, `${id}: ${res.summary}${needs}`);
  const summary = `approval ${id} times out: ${call.summary}`.slice(0, 200);
  approvalRequested(call.name);
  let answer: Answer | 'timeout';
  try {
    answer = res.needs ? await countVotes(ctx, pending, summary) : await oneDecision(ctx, pending, preApprovable, summary);
  } catch (err) {
    approvalEnded(call.name, 'cancelled');
    throw err;
  }
  approvalEnded(call.name, answer === 'timeout' ? 'timeout' : answer.kind === 'decided' && answer.approve ? 'approved' : 'rejected');
  if (answer === 'timeout') {
    state.pendingApprovals = state.pendingApprovals.filter((a) => a.id !== id);
    ctx.votes.delete(id);
    ctx.expired.add(id);
    ctx.note('approval', `${id} timed out after ${input.approvalTimeoutMs} ms`);
    await ctx.audit({ kind: 'approval', id, decision: 'timeout', what: pending.summary, by: 'kiln' });
    return { kind: 'timeout', approvalId: id };
  }
  return answer;
}

/** An approval anyone may answer: the first decision, or a pre-approval for it that arrives while it waits. */
async function oneDecision(ctx: RunContext, pending: PendingApproval, exact: string | undefined, timerSummary: string): Promise<Answer | 'timeout'> {
  const id = pending.id;
  const answered = await condition(() => ctx.decisions.has(id) || ctx.preApprovalFor(exact) !== undefined, ctx.input.approvalTimeoutMs, {
    summary: timerSummary,
  });
  if (!answered) return 'timeout';
  settle(ctx, id);
  const d = ctx.decisions.get(id);
  if (!d) return usePreApproval(ctx, id, ctx.preApprovalFor(exact)!, pending);
  const identity = await identify(ctx, d, pending);
  const by = identity.kind === 'authenticated' ? identity.name : (d.by ?? 'unknown');
  if (identity.unverified) ctx.note('approval', `${id}: the decision's signature was not counted (${identity.unverified}); recorded as ${identity.kind}`);
  ctx.note('approval', `${id} ${d.approve ? 'approved' : 'rejected'} by ${by}${d.scope === 'run' ? ' for the rest of the run' : ''}${said(d)}`);
  await ctx.audit({
    kind: 'approval',
    id,
    decision: d.approve ? 'approved' : 'rejected',
    scope: d.scope ?? 'once',
    what: pending.summary,
    hash: pending.hash,
    by,
    note: d.note ?? d.reason,
    identity,
  });
  return decided(pending, d.approve, [by], d.scope ?? 'once', d.reason);
}

/**
 * An approval that needs authenticated approvers (two different ones for a twoPerson call): each
 * decision is checked as it comes; a decision that is not authenticated does not count either
 * way, the same person twice counts once, a rejection by an authenticated person rejects.
 */
async function countVotes(ctx: RunContext, pending: PendingApproval, timerSummary: string): Promise<Answer | 'timeout'> {
  const id = pending.id;
  const need = pending.approvals!;
  const deadline = new Date(pending.expiresAt).getTime();
  const counted = new Map<string, ApproverIdentity>();
  let seen = 0;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return 'timeout';
    const arrived = await condition(() => (ctx.votes.get(id)?.length ?? 0) > seen, left, { summary: timerSummary });
    if (!arrived) return 'timeout';
    for (const d of ctx.votes.get(id)!.slice(seen)) {
      seen += 1;
      const identity = await identify(ctx, d, pending);
      const claimed = d.by ?? identity.name;
      if (identity.kind !== 'authenticated') {
        const why = `${id} needs authenticated approvers (through kiln serve): the ${d.approve ? 'approval' : 'rejection'} by ${claimed} (${identity.kind}${identity.unverified ? `; ${identity.unverified}` : ''}) does not count`;
        ctx.note('approval', why);
        await ctx.audit({ kind: 'approval', id, decision: 'not counted', what: pending.summary, hash: pending.hash, by: claimed, note: why, identity });
        continue;
      }
      const refused = notAnotherPerson(ctx, identity, need.starterCounts === true);
      if (refused) {
        const why = `${id}: the ${d.approve ? 'approval' : 'rejection'} by ${identity.name} does not count: ${refused}`;
        ctx.note('approval', why);
        await ctx.audit({ kind: 'approval', id, decision: 'not counted', what: pending.summary, hash: pending.hash, by: identity.name, note: why, identity });
        continue;
      }
      // a person is a user of the run's tenant, however many tokens they hold: counted by name
      const who = `${identity.tenant ?? ''}/${identity.name}`;
      if (!d.approve) {
        settle(ctx, id);
        ctx.note('approval', `${id} rejected by ${identity.name}${said(d)}`);
        await ctx.audit({ kind: 'approval', id, decision: 'rejected', what: pending.summary, hash: pending.hash, by: identity.name, note: d.reason, identity });
        return decided(pending, false, [identity.name], 'once', d.reason);
      }
      if (counted.has(who)) {
        ctx.note('approval', `${id}: ${identity.name} already approved; the same person counts once (${counted.size} of ${need.needed})`);
        continue;
      }
      counted.set(who, identity);
      need.by = [...counted.values()].map((i) => i.name);
      const votes = `${counted.size} of ${need.needed}`;
      const enough = counted.size >= need.needed;
      if (enough) settle(ctx, id);
      ctx.note('approval', `${id} approved by ${identity.name} (${votes} approvals)${said(d)}`);
      await ctx.audit({
        kind: 'approval',
        id,
        decision: 'approved',
        votes,
        what: pending.summary,
        hash: pending.hash,
        by: identity.name,
        note: d.note,
        identity,
      });
      ctx.showDetails();
      if (enough) {
        // a run-wide grant would let later calls skip the second person: these are approved one by one
        return decided(pending, true, need.by, 'once');
      }
    }
  }
}

/**
 * Why an authenticated approver is not one of the people an approval needs, or undefined: a user
 * of another tenant than the one whose server signed the run's start, or the person who started
 * the run (unless the policy's approvals.starterCounts lets them count).
 */
function notAnotherPerson(ctx: RunContext, identity: ApproverIdentity, starterCounts: boolean): string | undefined {
  const starter = ctx.state.startedBy;
  if (!starter) return undefined;
  if (starter.kind === 'authenticated' && starter.tenant !== undefined && identity.tenant !== starter.tenant)
    return `they are of tenant ${identity.tenant ?? '(none)'}, the run of tenant ${starter.tenant}`;
  const same = starter.name === identity.name && (starter.kind !== 'authenticated' || starter.tenant === identity.tenant);
  if (same && !starterCounts) return 'they started the run, and the people who approve it are others (policy approvals.starterCounts)';
  return undefined;
}

/** Decided: no longer pending (a status query right after the decision shows it gone), and later decisions are refused. */
function settle(ctx: RunContext, id: string): void {
  ctx.state.pendingApprovals = ctx.state.pendingApprovals.filter((a) => a.id !== id);
  ctx.votes.delete(id);
  ctx.decided.add(id);
}

/**
 * A decision with a signature is checked by a worker that holds the key, against this execution
 * and the hash this run recorded for what is approved; one without is what its `by` says.
 */
async function identify(ctx: RunContext, d: ApprovalDecision, pending: PendingApproval): Promise<ApproverIdentity> {
  if (!d.attestation) return identifyApprover(d.by);
  return shared.identifyDecision({ runId: ctx.input.runId, execution: workflowInfo().firstExecutionRunId, call: pending.hash ?? '', decision: d });
}

async function usePreApproval(ctx: RunContext, id: string, pre: HeldPreApproval, call: { summary: string; hash?: string }): Promise<Answer> {
  ctx.usePreApproval(pre, id);
  ctx.note('approval', `${id} answered by pre-approval ${pre.id} of ${pre.by}: ${call.summary}`);
  await ctx.audit({
    kind: 'pre-approval',
    id: pre.id,
    decision: 'used',
    answered: id,
    scope: pre.scope,
    what: call.summary,
    hash: call.hash,
    command: pre.text,
    by: pre.by,
  });
  return { kind: 'decided', approvalId: id, approve: true, by: pre.by, approvers: [pre.by], scope: 'once', hash: call.hash };
}

function decided(pending: PendingApproval, approve: boolean, approvers: string[], scope: 'once' | 'run', reason?: string): Answer {
  return {
    kind: 'decided',
    approvalId: pending.id,
    approve,
    by: approvers.join(' and '),
    approvers,
    scope,
    reason,
    hash: pending.hash,
    grantKey: pending.grantKey,
  };
}

/** What the person said with the decision, for the live view. */
function said(d: ApprovalDecision): string {
  return d.approve ? (d.note ? `: ${d.note}` : '') : `: ${d.reason?.trim() || 'no reason given'}`;
}
