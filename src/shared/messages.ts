/**
 * Message definitions, used by name on both sides (never string names in the CLI).
 * Approvals and human decisions exist both as Updates (the sender learns "accepted" or why not)
 * and as Signals of the same name (for the Web UI and fire-and-forget senders).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { LeaseRequest, LedgerView, LimitChange, ReserveAnswer, ReserveRequest, SettleRequest } from './budget-ledger.js';
import type { ApprovalDecision, CancelRequest, ChildSpend, HumanDecision, PreApproval, RunState, StartAttestation } from './types.js';

export const statusQuery = defineQuery<RunState>('status');

export const approveUpdate = defineUpdate<string, [ApprovalDecision]>('approve');
export const approveSignal = defineSignal<[ApprovalDecision]>('approve');

/** A pre-approval: held by the run, matched when a request for exactly that command appears. */
export const preApproveUpdate = defineUpdate<string, [PreApproval]>('preApprove');
export const preApproveSignal = defineSignal<[PreApproval]>('preApprove');

export const humanUpdate = defineUpdate<string, [HumanDecision]>('human');
export const humanSignal = defineSignal<[HumanDecision]>('human');

/** Who cancels and why, sent just before the cancellation itself (`kiln cancel --by --reason`). */
export const cancelRequestSignal = defineSignal<[CancelRequest]>('cancelRequest');

/** `kiln serve`'s signed start, sent once Temporal has named the execution (src/auth/attestation.ts). */
export const startedBySignal = defineSignal<[StartAttestation]>('startedBy');

/** A child of parallel attempts that ended cancelled tells its parent what it spent (its result, which would, is a cancellation). */
export const childSpendSignal = defineSignal<[ChildSpend]>('childSpend');

/** The budget ledger's (src/workflows/budget-ledger.ts): a call's worst case held before it is sent, settled with its bill, or let go. */
export const budgetReserveUpdate = defineUpdate<ReserveAnswer, [ReserveRequest]>('budgetReserve');
export const budgetSettleUpdate = defineUpdate<{ counted: boolean }, [SettleRequest]>('budgetSettle');
export const budgetReleaseUpdate = defineUpdate<void, [string]>('budgetRelease');
/** A grant to an activity's lease, which its calls spend locally (src/activities/budget-lease.ts). */
export const budgetLeaseUpdate = defineUpdate<ReserveAnswer, [LeaseRequest]>('budgetLease');
/** An activity's billed replies told together (src/activities/budget.ts Settling). */
export const budgetSettleManyUpdate = defineUpdate<{ counted: number }, [SettleRequest[]]>('budgetSettleMany');
/** A run that ended lets go what its killed calls still hold. */
export const budgetReleaseRunSignal = defineSignal<[string]>('budgetReleaseRun');
export const budgetLimitUpdate = defineUpdate<LedgerView, [LimitChange]>('budgetLimit');
export const budgetQuery = defineQuery<LedgerView>('budget');
