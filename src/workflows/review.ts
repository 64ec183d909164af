/**
 * The independent review between a passing verification and `succeeded` (`--review on|required`):
 * one activity asks the reviewer; its verdict ships the patch, sends the run to a retry with the
 * findings (counted against the attempts), or, the second time it asks for changes, to a person.
 */
import { ledgerRef, parkForBudget } from './budget-park.js';
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { Review, Verdict } from '../shared/types.js';
import { addSpend } from '../loop/budget.js';
import type { RunContext } from './context.js';
import { failureReason, hostOptions, isHostLost } from './options.js';

export type ReviewOutcome = { kind: 'ship' } | { kind: 'retry'; findings: Review } | { kind: 'human'; reason: string };

/** What the reviewer's verdict on the verified tree means for the run. */
export async function reviewVerified(ctx: RunContext, verdict: Verdict, tree: string | undefined): Promise<ReviewOutcome> {
  const { input, state } = ctx;
  // the policy's requirement outranks what the run's request asked for
  const mode = ctx.prep?.reviewRequired ? 'required' : (input.review ?? 'off');
  if (mode === 'off') return { kind: 'ship' };
  const n = (state.reviews?.length ?? 0) + 1;
  ctx.note('verdict', `independent review ${n} of attempt ${state.attempt}${input.reviewModel ? ` (${input.reviewModel})` : ''}`);
  let review = await ask(ctx, n, verdict, tree);
  while (review.overBudget) {
    // the reviewer was not asked: a person raises the limit (and approves), or the run waits for one
    const end = await parkForBudget(ctx, review.overBudget, 'verifying');
    if (end) return { kind: 'human', reason: `the review does not fit the budget: ${end.kind === 'budget' ? end.which : 'nobody raised it in time'}` };
    review = await ask(ctx, n, verdict, tree);
  }
  state.reviews = [...(state.reviews ?? []), review];
  addSpend(state.budget, review.usage, review.costUsd);
  if (review.decision === 'approve') {
    ctx.note('verdict', `review ${n}: approved — ${review.summary}`);
    return { kind: 'ship' };
  }
  if (review.decision === 'unavailable') {
    ctx.note('verdict', `review ${n}: unavailable — ${review.problem}`);
    if (mode === 'on') return { kind: 'ship' };
    return { kind: 'human', reason: `the review is required and could not be had: ${review.problem}` };
  }
  const said = review.findings.map((f) => `${f.kind}${f.file ? ` (${f.file})` : ''}`).join(', ');
  ctx.note('verdict', `review ${n}: changes requested — ${said || review.summary}`);
  const asked = state.reviews.filter((r) => r.decision === 'request_changes').length;
  if (asked >= 2) return { kind: 'human', reason: `the reviewer requested changes twice: ${state.reviews.map((r) => r.summary).join(' | ')}`.slice(0, 1000) };
  if (state.attempt >= state.maxAttempts)
    return { kind: 'human', reason: `the reviewer requested changes and no attempts are left: ${review.summary}`.slice(0, 1000) };
  return { kind: 'retry', findings: review };
}

/** The review activity; one that fails for good is an unavailable review, not a blocked run. */
async function ask(ctx: RunContext, n: number, verdict: Verdict, tree: string | undefined): Promise<Review> {
  const { input, state } = ctx;
  try {
    return await ctx.host!.reviewPatch.executeWithOptions({ ...hostOptions(input), summary: `review ${n} of attempt ${state.attempt}` }, [
      {
        ...ctx.ref(),
        events: ctx.takeUnwritten(),
        attempt: state.attempt,
        review: n,
        ...(tree ? { tree } : {}),
        verdict: verdict.summary,
        ledger: ledgerRef(ctx),
      },
    ]);
  } catch (err) {
    // a lost host rebuilds the worktree and verifies again (run.ts); a cancel ends the run
    if (isCancellation(err) || isHostLost(err) || !(err instanceof ActivityFailure)) throw err;
    const none = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    return {
      attempt: state.attempt,
      decision: 'unavailable',
      summary: '',
      findings: [],
      model: input.reviewModel ?? input.model,
      usage: none,
      costUsd: 0,
      problem: failureReason(err),
    };
  }
}

/** The retry's prompt after a review asked for changes: its findings are what the reflection starts from. */
export function reviewRetryPrompt(attempt: number, max: number, review: Pick<Review, 'summary' | 'findings'>): string {
  const findings = review.findings.map((f) => `- ${f.kind}${f.file ? ` in ${f.file}` : ''}: ${f.detail}`);
  return [
    `The checks passed, but an independent reviewer read your patch and requested changes. This is attempt ${attempt} of ${max}.`,
    `Review:\n${review.summary}${findings.length ? `\n${findings.join('\n')}` : ''}`,
    'Before you edit anything, call reflect with: attempt, last_failure (what the reviewer found), last_cause, this_fix, rationale, changed_files.',
    'Then fix it in general (not for particular inputs), run the checks, and call finish.',
  ].join('\n\n');
}
