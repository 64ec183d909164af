/**
 * What the API needs from the run store: Temporal in `kiln serve` (temporal-backend.ts), an
 * in-memory fake in the route tests. Every call names a run by id; the routes check the tenant.
 */
import type { LedgerView } from '../shared/budget-ledger.js';
import type { ApprovalDecision, HumanDecision, RunInput, RunResult, RunState, StartAttestation } from '../shared/types.js';
import type { FleetFilters } from '../client/fleet-query.js';

/** Kept with the run at start (Temporal memo): who started it and what for. */
export interface RunMemo {
  startedBy?: string;
  /** sha256 of the request body: an Idempotency-Key reused with another body is refused */
  bodyHash?: string;
  maxUsd?: number;
}

export interface RunInfo {
  runId: string;
  /** the first execution's Temporal run id: what the server's signatures for this run name */
  execution?: string;
  /**
   * the tenant the server signed at the start of this execution; undefined: a run not started
   * through `kiln serve`, or an execution under a reused id the server never signed (no tenant sees it)
   */
  tenant?: string;
  status: string;
  open: boolean;
  phase?: string;
  /** the repo the server signed at start (with the tenant) */
  repo?: string;
  startedAt?: string;
  closedAt?: string;
  memo: RunMemo;
}

export interface ListQuery extends FleetFilters {
  tenant: string;
  open?: boolean;
  startedSince?: Date;
  limit?: number;
}

export interface RunBackend {
  start(input: RunInput, tenant: string, memo: RunMemo): Promise<{ runId: string; attached: boolean; execution?: string }>;
  /** hands the execution the server's signed start: the worker checks it, and describe/list read tenant and repo from it */
  attestStart(runId: string, execution: string, start: StartAttestation): Promise<void>;
  describe(runId: string): Promise<RunInfo | undefined>;
  list(q: ListQuery): Promise<RunInfo[]>;
  /** the live state; undefined when no worker answers */
  state(runId: string): Promise<RunState | undefined>;
  /** the outcome of a closed run */
  result(runId: string): Promise<RunResult | undefined>;
  input(runId: string): Promise<RunInput | undefined>;
  /** false when the run had ended already (it may end between a look at it and this) */
  cancel(runId: string, by: string, reason?: string): Promise<boolean>;
  approve(runId: string, d: ApprovalDecision): Promise<string>;
  human(runId: string, d: HumanDecision): Promise<string>;
  /** the tenant's budget ledger; undefined before its first reservation or limit */
  budget(tenant: string): Promise<LedgerView | undefined>;
  /** whether the run store knows the search attributes the workflow upserts */
  searchAttributes(): Promise<boolean>;
}
