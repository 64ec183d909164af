/**
 * Wire types shared by the workflow, the activities and the CLI. Type-only on purpose: the
 * workflow bundle must stay free of I/O, and zod validation happens at the edges (CLI, activities).
 */
import type { OverBudget } from './budget-ledger.js';
export type Phase =
  | 'preparing'
  | 'planning'
  | 'editing'
  | 'awaiting_approval'
  | 'awaiting_budget'
  | 'verifying'
  | 'retrying'
  | 'needs_human'
  | 'succeeded'
  | 'blocked'
  | 'cancelled';

/** Defaults for the optional RunInput fields. */
/** Long enough that a busy but living host is never mistaken for a lost one. */
export const DEFAULT_HOST_LOSS_MS = 10 * 60_000;
export const DEFAULT_CONTEXT_TOKENS = 200_000;
/** 150 turns ≈ 2,000 events at the measured 13.5 events (3.9 KB) per turn of `npm run bench`: far below the 51,200-event limit, and replay stays quick. */
export const DEFAULT_TURNS_PER_RUN = 150;

/** The longest command a pre-approval may name: a person types it; longer commands are approved one by one. */
export const PRE_APPROVAL_MAX_CHARS = 2000;

export const TERMINAL_PHASES: readonly Phase[] = ['succeeded', 'blocked', 'cancelled'];

export type ApprovalMode = 'strict' | 'default' | 'auto';

export interface Budgets {
  maxTurns: number;
  maxTokens: number;
  maxUsd: number;
  maxWallMs: number;
}

export interface RunInput {
  runId: string;
  repo: string;
  goal: string;
  base?: string;
  checks: string[];
  setup: string[];
  model: string;
  maxTokens: number;
  temperature?: number;
  sandbox: 'bwrap' | 'off';
  approvalMode: ApprovalMode;
  allowTestEdits: boolean;
  /** how long an approval may wait before the run goes to needs_human */
  approvalTimeoutMs: number;
  /** how long needs_human waits for a person before the run ends blocked */
  humanTimeoutMs: number;
  budgets: Budgets;
  /** attempts in all, first try included (DESIGN: retry ≤ 2 → 3) */
  maxAttempts: number;
  /** activity heartbeat timeout: how soon a dead worker is noticed */
  heartbeatTimeoutMs: number;
  commandTimeoutMs: number;
  /** the model's context window in tokens; older turns are compacted before it fills */
  contextTokens?: number;
  /** continue-as-new after this many turns in one workflow run (history stays small) */
  turnsPerRun?: number;
  /** no worker taking the worktree host's activities for this long means the host is gone */
  hostLossTimeoutMs?: number;
  /**
   * the user asked for a run that may end without checks (`--unverified`): without it, a repo
   * with no checks goes to a person instead of `succeeded`
   */
  allowUnverified?: boolean;
  /** globs protected on top of the repo's list (an eval task's tests) */
  protect?: string[];
  /**
   * an independent review of a verified patch before it succeeds (absent: off). `on`: a review
   * that cannot be had is noted and the run goes on; `required`: it goes to a person instead
   */
  review?: ReviewMode;
  /** the reviewer's model (absent: the run's) */
  reviewModel?: string;
  /** parallel attempts: this many child runs of the goal at once, the first to succeed wins (absent or 1: one run) */
  attempts?: number;
  /** the children's models, child i the (i mod length)-th (absent: the run's model for all) */
  attemptModels?: string[];
  /** upsert the KilnPhase/KilnRepo search attributes (only when the server has them) */
  searchAttributes?: boolean;
  /**
   * set by `kiln serve`: who asked for the run. A claim only: what the worker checks is the
   * StartAttestation the server sends to the execution once Temporal has named it.
   */
  requestedBy?: ApprovalAttestation;
}

export type ReviewMode = 'off' | 'on' | 'required';

/** What the reviewer found wrong with a patch, by kind. */
export interface ReviewFinding {
  kind: 'special_case' | 'test_detection' | 'outside_goal' | 'removed_behaviour' | 'other';
  file?: string;
  detail: string;
}

/** One independent review of a verified patch. */
export interface Review {
  attempt: number;
  /** unavailable: the reviewer could not be asked, or its answer could not be read (`problem`) */
  decision: 'approve' | 'request_changes' | 'unavailable';
  summary: string;
  findings: ReviewFinding[];
  /** the tree the reviewer read (`git write-tree` in the run's repository): what an eval judges it against */
  tree?: string;
  model: string;
  usage: Usage;
  costUsd: number;
  problem?: string;
  /** the reviewer was not asked: its call's worst case does not fit the budget ledger (the run parks, then asks again) */
  overBudget?: OverBudget;
}

export interface PlanStep {
  step: string;
  status: 'pending' | 'in_progress' | 'done';
}

export interface CommandSegmentView {
  argv: string[];
  text: string;
  via?: string[];
}

export interface PendingApproval {
  id: string;
  toolUseId: string;
  tool: string;
  /** one line: "run_command: npm install left-pad" */
  summary: string;
  segments?: CommandSegmentView[];
  /** an edit's or a new file's diff, redacted and bounded (activities/approval-preview.ts) */
  preview?: string;
  rule: string;
  reason: string;
  grantKey?: string;
  hash?: string;
  requestedAt: string;
  expiresAt: string;
  /** an approval the policy's approvals section governs: who must approve, who has so far */
  approvals?: { needed: number; authenticated: boolean; by: string[]; starterCounts?: boolean };
}

/** `kiln approve RUN --pre TEXT`: approves, ahead of time, a command that is exactly TEXT. */
export interface PreApproval {
  text: string;
  /** once (default): answers the first such request; run: every one */
  scope?: 'once' | 'run';
  by?: string;
}

/** A pre-approval the run holds until a request matches it. */
export interface HeldPreApproval {
  id: string;
  text: string;
  scope: 'once' | 'run';
  by: string;
  at: string;
  /** the approvals it answered */
  answered: string[];
}

export interface ApprovalDecision {
  approvalId: string;
  approve: boolean;
  /** "run": approve this kind of call for the rest of the run */
  scope?: 'once' | 'run';
  by?: string;
  note?: string;
  /** a rejection's reason goes back to the model */
  reason?: string;
  /** set by `kiln serve`: the authenticated user, signed for this decision (src/auth/attestation.ts) */
  attestation?: ApprovalAttestation;
}

/** A server's signed word that `user` of `tenant` made this decision; checked by the worker. */
export interface ApprovalAttestation {
  user: string;
  tenant: string;
  issuedAt: string;
  /** HMAC-SHA256, hex, over the execution, the run, the approval, the call's hash, the decision and the fields above */
  sig: string;
}

/** `kiln serve`'s signed word on who started which execution, for which tenant, on which repo (src/auth/attestation.ts). */
export interface StartAttestation {
  /** the first execution's Temporal run id */
  execution: string;
  runId: string;
  repo: string;
  user: string;
  tenant: string;
  issuedAt: string;
  sig: string;
}

/** Who asked to cancel a run, and why: recorded in audit.jsonl and the run's reason. */
export interface CancelRequest {
  by: string;
  reason?: string;
  /** how the sender was identified, e.g. the client's Temporal identity */
  via?: string;
}

export interface HumanDecision {
  action: 'hint' | 'accept' | 'abandon';
  text?: string;
  by?: string;
}

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface BudgetUsed extends Usage {
  turns: number;
  costUsd: number;
  wallMs: number;
}

export interface CheckOutcome {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  passed: boolean;
  failingTests: string[];
  /** bounded, redacted tail of the output */
  tail: string;
}

export interface Verdict {
  pass: boolean;
  checks: CheckOutcome[];
  outOfScope: string[];
  protectedChanged: string[];
  changedFiles: string[];
  /** stable across attempts for the same failure: same failing checks and tests */
  signature: string;
  summary: string;
  /** `git write-tree` of the tree the checks ran on; a later edit makes this verdict stale */
  tree?: string;
  /** the worktree's own tree when it was verified: the run succeeds only while the worktree still holds it */
  modelTree?: string;
  /**
   * why it failed when no retry can help: no checks to run, or checks that could not run
   * (command not found, exit 127, sandbox or setup error) — a person decides, no attempt is spent
   */
  cause?: 'no_checks' | 'infrastructure' | 'harness';
  /** the patch's files the checks reached, and how (product, harness, new); untouched ones left out */
  influence?: Array<{ path: string; class: 'product' | 'harness' | 'new' | 'untouched'; how: string }>;
  /**
   * the counterfactual run: the verified tree with the product changes taken out; what failed on
   * the base must fail there again
   */
  counterfactual?: { ran: boolean; reverted: string[]; passedWithoutProduct: string[]; note?: string };
}

/** One line of the run's live log, shown by `kiln run` / `kiln status` and the Web UI. */
export interface LogLine {
  seq: number;
  at: string;
  kind: 'phase' | 'turn' | 'tool' | 'approval' | 'verdict' | 'human' | 'note';
  text: string;
}

export interface RunState {
  runId: string;
  goal: string;
  repo: string;
  model: string;
  scripted: boolean;
  phase: Phase;
  attempt: number;
  maxAttempts: number;
  turn: number;
  plan: PlanStep[];
  touchedFiles: string[];
  lastObservation: string;
  pendingApprovals: PendingApproval[];
  /** pre-approvals not used up (absent in runs that never had one) */
  preApprovals?: HeldPreApproval[];
  preApprovalSeq?: number;
  grants: string[];
  budget: BudgetUsed;
  /** per-turn usage of the last turns (metrics.json has every turn) */
  recentTurns?: Array<Usage & { turn: number; costUsd: number }>;
  worktree?: string;
  baseCommit?: string;
  artifactsDir: string;
  hostQueue?: string;
  verdict?: Verdict;
  /** why the run ended, or why it waits */
  reason?: string;
  acceptedBy?: string;
  log: LogLine[];
  logSeq: number;
  /** the audit chain's end as the last write returned it: `kiln audit verify` checks audit.jsonl ends there (absent before the first audit line) */
  auditHead?: { seq: number; hash: string };
  /** the sha256 of the setup its approvers approved (policy approvals.setup): a rebuild runs only that one */
  setupApproved?: string;
  /** who started the run as the worker checked it (a start `kiln serve` signed for this execution) */
  startedBy?: { name: string; kind: string; tenant?: string };
  /** the independent reviews of its verified patches, first first (absent when none was asked) */
  reviews?: Review[];
  /** a run of parallel attempts: its child runs as they stand (their own status has the rest) */
  children?: FanOutChild[];
  /** the child run whose work succeeded */
  winner?: string;
}

/** What a child run of parallel attempts spent, as it tells its parent when it ends cancelled. */
export interface ChildSpend {
  runId: string;
  tokens: Usage;
  costUsd: number;
  turns: number;
}

export interface FanOutChild {
  runId: string;
  model: string;
  /** as the parent last saw it: preparing until the child ended */
  phase: Phase;
  reason?: string;
}

export interface RunResult {
  runId: string;
  state: Phase;
  reason?: string;
  attempts: number;
  turns: number;
  artifactsDir: string;
  patchPath: string;
  tokens: Usage;
  costUsd: number;
  scripted: boolean;
  acceptedBy?: string;
}
