/**
 * What waits for a person: the tenant's pending approvals and runs that need a person, and the
 * answers to them. An approval is signed by this server for the execution and the exact call
 * the approver was shown.
 */
import { signApproval } from '../../auth/attestation.js';
import { UsageError } from '../../shared/errors.js';
import type { ApprovalDecision, RunState } from '../../shared/types.js';
import type { RunInfo } from '../backend.js';
import { HttpError, notFound } from '../http-errors.js';
import { body, need, ownRun, type Api, type RouteOptions } from '../request.js';
import { Decide, Human } from '../schemas.js';

export function addApprovalRoutes(api: Api, o: RouteOptions): void {
  api.get('/approvals', async (c) => {
    const id = need(c, 'read');
    const open = await o.backend.list({ tenant: id.tenant, open: true, limit: 100 });
    const states = await Promise.all(open.map(async (r) => ({ run: r, st: await o.backend.state(r.runId) })));
    const context = (run: RunInfo, st: RunState) => ({
      runId: run.runId,
      repo: st.repo,
      goal: st.goal,
      model: st.model,
      scripted: st.scripted,
      phase: st.phase,
      plan: st.plan,
      recentLog: st.log.slice(-12),
      startedBy: run.memo.startedBy,
    });
    const approvals = states.flatMap(({ run, st }) => (st ? st.pendingApprovals.map((a) => ({ ...context(run, st), approval: a })) : []));
    // runs that wait for a person's hint, accept or abandon (POST /runs/{id}/human)
    const needsHuman = states.flatMap(({ run, st }) => (st?.phase === 'needs_human' ? [{ ...context(run, st), reason: st.reason ?? '' }] : []));
    return c.json({ approvals, needsHuman });
  });

  api.post('/runs/:id/approvals/:approvalId', async (c) => {
    const id = need(c, 'approve');
    const run = await ownRun(c, o);
    const approvalId = c.req.param('approvalId');
    const req = await body(c, Decide);
    if (req.decision === 'reject' && !req.reason) throw new HttpError(400, 'bad_request', 'a rejection needs a reason: it goes back to the model', 'reason');
    const st = await o.backend.state(run.runId);
    const pending = st?.pendingApprovals.find((a) => a.id === approvalId);
    if (st && !pending) throw notFound(`pending approval ${approvalId} in run ${run.runId}`);
    // a call that needs several approvers needs them every time: the run takes no grant from it
    if (req.scope === 'run' && pending?.approvals)
      throw new HttpError(
        400,
        'bad_request',
        `${approvalId} needs ${pending.approvals.needed} approvers each time it runs, so it cannot be approved for the rest of the run: approve it once`,
        'scope',
      );
    // the signature names the execution and exactly the call the approver was shown: read both from the run, or send nothing
    if (!st || !pending || !run.execution)
      throw new HttpError(409, 'not_applied', `run ${run.runId} does not answer (no worker?): its pending approval cannot be read to sign it; try again`);
    const approve = req.decision === 'approve';
    const scope = req.scope ?? 'once';
    const attestation = signApproval(o.approvalKey, {
      execution: run.execution,
      runId: run.runId,
      approvalId,
      call: pending.hash ?? '',
      approve,
      scope,
      user: id.user,
      tenant: id.tenant,
      issuedAt: o.now().toISOString(),
    });
    const d: ApprovalDecision = { approvalId, approve, scope, by: id.user, ...(req.reason ? { reason: req.reason } : {}), attestation };
    const result = await applied(() => o.backend.approve(run.runId, d));
    return c.json({ runId: run.runId, approvalId, decision: req.decision, scope, by: id.user, result });
  });

  api.post('/runs/:id/human', async (c) => {
    const id = need(c, 'approve');
    const run = await ownRun(c, o);
    const req = await body(c, Human);
    const result = await applied(() => o.backend.human(run.runId, { action: req.action, ...(req.text ? { text: req.text } : {}), by: id.user }));
    return c.json({ runId: run.runId, action: req.action, by: id.user, result });
  });
}

/** The run refused the decision (not pending any more, not waiting for a person): a conflict, not bad input. */
async function applied(send_: () => Promise<string>): Promise<string> {
  try {
    return await send_();
  } catch (err) {
    if (err instanceof UsageError) throw new HttpError(409, 'not_applied', err.message);
    throw err;
  }
}
