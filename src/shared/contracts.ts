/** Inputs and outputs of the activities: small, bounded and redacted, since they enter history. */
import type { BudgetUsed, Budgets, CheckOutcome, LogLine, PlanStep, RunInput, RunState, Usage, Verdict } from './types.js';
import type { Limit, OverBudget } from './budget-ledger.js';

export interface RunRef {
  runId: string;
  repo: string;
  /** workflow-side log lines not yet written to events.jsonl (written once, by seq) */
  events?: LogLine[];
}

export interface PrepareResult {
  ok: boolean;
  worktree: string;
  baseCommit: string;
  checks: string[];
  hostQueue: string;
  /** when !ok: why, with the tail of the setup output */
  reason?: string;
  /** after a host loss: what the checkpoint brought back */
  restored?: { applied: boolean; files: string[]; turn: number; note?: string };
  /** the policy names the setup (approvals.setup, a `setup:` twoPerson entry): it has not run, and waits for its approvers */
  setupHeld?: HeldSetup;
  /** the policy's approvals.patch: the run's patch is judged against it before the run succeeds */
  patchRule?: { overLines: number; approvers: number };
  /** the policy requires an independent review of the verified patch, whatever the run asked */
  reviewRequired?: boolean;
}

/** Setup commands that wait for a person before they run with network. */
export interface HeldSetup {
  commands: string[];
  /** sha256 of the command list: the setup that runs after the approval must be exactly this one */
  hash: string;
  rule: string;
  reason: string;
  needs: { approvers: number; authenticated: boolean; starterCounts?: boolean };
}

/** The run's patch measured against approvals.patch. */
export interface PatchJudgement {
  /** the tree measured (the verified one, or the worktree's now) */
  tree: string;
  /** changed lines, added plus removed; a binary file counts one */
  lines: number;
  files: number;
  /** absent: under the limit, nobody needs to approve */
  ask?: { rule: string; reason: string; needs: { approvers: number; authenticated: boolean; starterCounts?: boolean } };
}

/** The worktree's patch against the base, taken at the start of a turn that follows changes. */
export type Checkpoint = { turn: number; patch: string; files: string[] } | { turn: number; tooLarge: number };

export interface ToolCallView {
  id: string;
  name: string;
  /** hash of name + input: the same call twice has the same fingerprint (stuck detection) */
  fingerprint: string;
  /** one line for the log and the Web UI: "edit src/session.js" */
  summary: string;
  /** the call failed validation (unknown tool, bad input): this goes back to the model */
  inputError?: string;
}

/** Where a run's model calls reserve: the ledger workflow of its tenant (on the run's own task queue), and the scopes beyond the tenant. */
export interface LedgerRef {
  tenant: string;
  taskQueue: string;
  parent?: { runId: string; cap: Limit };
}

export interface AgentTurnInput extends RunRef {
  turn: number;
  attempt: number;
  /** files may have changed since the last turn: take a checkpoint for a host loss */
  checkpoint?: boolean;
  /** the plan, touched files and failures: what a compaction summary must keep */
  memory?: { plan: PlanStep[]; touchedFiles: string[]; failures: string[] };
  /** text the workflow adds to the next user message (retry feedback, the stop gate, a hint) */
  userText?: string;
  /** results the workflow decided itself (a rejection, the stop gate's answer to finish) */
  toolResults?: Record<string, { content: string; isError: boolean }>;
  /** what is left of the run's token budget: it caps the turn's max_tokens */
  tokensLeft?: number;
  /** the budget ledger the turn's model calls reserve against (absent: none, as in runs recorded before it) */
  ledger?: LedgerRef;
  /**
   * Run the reply's calls in this activity, in order, while each is the worker's to decide (see
   * run-ahead.ts): the grants are the run's, as runTool would get them. Absent: calls only.
   */
  runAhead?: { grants: string[]; turns?: TurnsAhead };
}

/** The stuck detector's state (loop/stuck.ts): it crosses to the turn activity with the turns it runs ahead. */
export interface StuckState {
  lastCall?: string;
  sameCallStreak: number;
  lastError?: string;
  errorStreak: number;
  idleTurns: number;
  malformedStreak: number;
  /** the last calls (fingerprint and result), newest last, for cycle detection */
  recent?: string[];
}

/**
 * What the turn loop checks between two turns (loop/turn.ts) as the workflow holds it, handed to
 * the activity so that it may start the next turn itself while nothing needs the workflow
 * (run-ahead.ts, turnsAhead).
 */
export interface TurnsAhead {
  /** the last turn this attempt may start before the workflow continues as new */
  lastTurn: number;
  budgets: Budgets;
  /** the budget used when the turn was scheduled, its wall time the workflow's */
  used: BudgetUsed;
  /** the attempt's stuck detector as the workflow holds it, and whether it looks for cycles */
  stuck: StuckState;
  cycles: boolean;
}

export interface AgentTurnResult {
  calls: ToolCallView[];
  checkpoint?: Checkpoint;
  /** older turns were folded into a summary before this request */
  compacted?: { removedMessages: number; beforeTokens: number; afterTokens: number };
  /** bounded, redacted text the model said */
  text: string;
  stopReason: string | null;
  usage: Usage;
  costUsd: number;
  /** the turn did not start: its input alone would pass the token budget (names the budget) */
  budgetStop?: string;
  /** the turn's model call was not sent: its worst case does not fit a limit of the ledger (the run parks) */
  overBudget?: OverBudget;
  /** the leading calls run in this activity (runAhead), each result exactly as runTool's */
  ran?: Array<{ id: string; result: RunToolResult }>;
  /** the turns this activity went on to take, in order (runAhead.turns): each as its own activity's */
  more?: AgentTurnResult[];
}

/**
 * The details of a turn activity's failure when the turn that failed was not its first: the
 * turns it took before, as its result would have carried them (activities/run-ahead.ts).
 */
export interface TurnsTaken {
  turnsTaken: AgentTurnResult;
}

/** A turn's heartbeat details while one of its calls runs (the live view shows it as running). */
export interface RunningCall {
  /** the call's bounded, redacted summary */
  running: string;
  turn: number;
}

export interface RunToolInput extends RunRef {
  toolUseId: string;
  /** set when a person approved this exact parsed call */
  approvedHash?: string;
  /** run-wide grants: an ask whose grantKey is here runs without asking again */
  grants: string[];
}

export type ToolEffect = 'read' | 'edit' | 'command' | 'plan' | 'reflect' | 'none';

export type RunToolResult =
  | {
      status: 'done';
      ok: boolean;
      effect: ToolEffect;
      /** bounded, redacted observation */
      summary: string;
      path?: string;
      plan?: PlanStep[];
      /** the command was one of the repo's checks, run to completion */
      checkRan?: string;
      /** every check the command ran, matched by what runs (`a && b` runs both) */
      checksRan?: string[];
      /** the tool was found already applied after a crash */
      recovered?: boolean;
      /** files a command changed in the worktree (git's view: ignored files are not counted) */
      changedPaths?: string[];
    }
  | {
      status: 'ask';
      summary: string;
      rule: string;
      reason: string;
      grantKey?: string;
      hash?: string;
      segments?: Array<{ argv: string[]; text: string; via?: string[] }>;
      /** more than one approver, or only authenticated ones (the policy's approvals section); absent: one, anyone */
      needs?: { approvers: number; authenticated: boolean; starterCounts?: boolean };
      /** run_command: the exact command a pre-approval must equal; absent when it cannot be matched whole */
      exact?: string;
      /** edit, create_file: the diff it would make (redacted, bounded), for the person who decides */
      preview?: string;
    }
  | { status: 'denied'; summary: string; rule: string; reason: string };

export interface VerifyInput extends RunRef {
  attempt: number;
  /** the stop gate was satisfied when the agent finished */
  gateSatisfied: boolean;
}

export interface FinalizeInput extends RunRef {
  state: RunState;
  removeWorktree: boolean;
  /** a run that succeeded on its checks ships the tree that was verified, not whatever the worktree holds now */
  verifiedTree?: string;
}

export interface FinalizeResult {
  patchPath: string;
  diffLines: number;
  /** set when the disk was full: where the artifacts went instead, or why they could not be written */
  diskNote?: string;
}

export type { CheckOutcome, RunInput, Verdict };
