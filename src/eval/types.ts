/** What an eval reads (suite and tasks) and what it writes (one score per run, totals). */
import type { Phase, ReviewFinding, Usage, Verdict } from '../shared/types.js';
import type { TaskSource } from './source.js';

export const TASK_KINDS = ['bugfix', 'feature', 'refactor'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export const FAILURE_CLASSES = ['model', 'tool', 'policy', 'verifier', 'infrastructure'] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

export interface TaskBudgets {
  maxTurns?: number;
  maxTokens?: number;
  maxUsd?: number;
  maxWallMs?: number;
}

/** What a task says its runs must show; a run that shows it is "as expected". */
export interface TaskExpectation {
  /** a phase, or `not_succeeded`: Kiln must not count this run as a success (a cheating model) */
  outcome: Phase | 'not_succeeded';
  failureClass?: FailureClass | null;
  attempts?: number;
  needsHuman?: boolean;
  testsModified?: boolean;
  /** valid structured reflections (decisions.jsonl) */
  reflections?: number;
  /** what the hidden checks say of the shipped patch: false for a run Kiln lets through that they reject */
  honest?: boolean;
}

/** What can be wrong with a patch whose checks pass: the reviewer's finding kinds. */
export type ReviewClass = ReviewFinding['kind'];
export const REVIEW_CLASSES: readonly ReviewClass[] = ['special_case', 'test_detection', 'outside_goal', 'removed_behaviour', 'other'];

/** A check the run never sees (its files are not in the fixture): what it failing says is wrong with the patch. */
export interface HiddenCheck {
  run: string;
  class: ReviewClass;
}

export interface EvalTask {
  name: string;
  kind: TaskKind;
  goal: string;
  description?: string;
  /** the task's folder */
  dir: string;
  /** the fixture repo's files, copied and committed afresh for every run; laid over `source` when there is one */
  repoDir?: string;
  /** a library fetched from its registry at eval time: the fixture's base */
  source?: TaskSource;
  /** the planted bug: applied in order to the fixture before it is committed */
  mutations?: Mutation[];
  expectedFiles: string[];
  tests: string[];
  checks: string[];
  setup: string[];
  /** absolute path of the scripted transcript, when the task has one */
  script?: string;
  /** the transcripts of parallel attempts (`--attempts N`): child i plays the i-th, in turn (default: `script` for all) */
  attemptScripts?: string[];
  /** checks of the ground truth, run on a patch after the run (never shown to it) */
  hiddenChecks?: HiddenCheck[];
  /** the folder of the hidden checks' files, laid over the patched tree before they run */
  hiddenDir?: string;
  budgets: TaskBudgets;
  expect: TaskExpectation;
  /** what a run of parallel attempts must show (default: `expect`) */
  expectAttempts?: TaskExpectation;
}

/** One exact replacement in one file of the fixture. */
export interface Mutation {
  file: string;
  find: string;
  replace: string;
}

export interface EvalSuite {
  name: string;
  dir: string;
  tasks: EvalTask[];
}

/** What the eval itself saw and did while a run went on (not in the run's artifacts). */
export interface Observed {
  /** approvals the eval approved on the user's behalf */
  autoApproved: string[];
  /** why the run asked for a person, each time it did */
  needsHumanReasons: string[];
  /** what the eval answered: it never waits for a person */
  humanAction: 'abandon' | null;
  /** the run could not be followed to its end (workflow failure, eval timeout) */
  error?: string;
  wallMs: number;
}

/** What the hidden ground truth says of one patch (a git tree): honest, or what is wrong with it. */
export interface GroundTruth {
  /** null: the task has no hidden checks and no expected files, so nothing can say */
  honest: boolean | null;
  classes: ReviewClass[];
  /** the hidden checks that failed, and the files outside the task's expected ones */
  why: string[];
}

/** One review of a patch against the ground truth. */
export type ReviewCall = 'catch' | 'false_alarm' | 'miss' | 'approved_honest' | 'unavailable' | 'unjudged';

export interface ReviewJudgement {
  /** the run (a child of parallel attempts) that asked for it */
  runId: string;
  review: number;
  attempt: number;
  decision: 'approve' | 'request_changes' | 'unavailable';
  /** the kinds of the reviewer's findings */
  claimed: ReviewClass[];
  truth: GroundTruth;
  call: ReviewCall;
}

export interface ClassTally {
  catches: number;
  misses: number;
  falseAlarms: number;
}

/** The reviewer against the ground truth: catches and misses by what was wrong, false alarms by what it claimed. */
export interface ReviewTally {
  reviews: number;
  catches: number;
  falseAlarms: number;
  misses: number;
  approvedHonest: number;
  unavailable: number;
  unjudged: number;
  byClass: Record<ReviewClass, ClassTally>;
}

/** One child of a run of parallel attempts, from its own artifacts. */
export interface ChildScore {
  runId: string;
  outcome: Phase | 'unknown';
  winner: boolean;
  attempts: number;
  turns: number;
  tokens: Usage;
  costUsd: number;
}

export interface RunScore {
  task: string;
  kind: TaskKind;
  repeat: number;
  runId: string;
  /** attempts at once: 1 for a single run, N for `--attempts N` (the run is then the parent) */
  parallel: number;
  /** the eval's own clock from start to end, the same for both ways of running */
  wallMs: number;
  /** what the hidden checks say of the shipped patch (null: nothing shipped, or no ground truth) */
  honest: boolean | null;
  /** what they found wrong with it */
  dishonest: ReviewClass[];
  /** every review of the run (of each child's) against the ground truth */
  reviews: ReviewJudgement[];
  /** the children of parallel attempts, as each left its artifacts */
  children: ChildScore[];
  outcome: Phase | 'error';
  success: boolean;
  attempts: number;
  turns: number;
  tokens: Usage;
  costUsd: number;
  durationMs: number;
  diffLines: number;
  changedFiles: string[];
  /** changed files that the task did not expect */
  unexpectedFiles: string[];
  testsModified: boolean;
  overBudget: boolean;
  failureClass: FailureClass | null;
  /** why the class is what it is, when the class alone would mislead (a verifier's refusal of correct work) */
  failureNote: string | null;
  reason: string | null;
  /** why it failed, from the run's record: the last verdict's findings and every needs_human cause */
  findings: string[];
  /** the patch's files the last verdict's checks reached, with their class and the observation behind it */
  influence: Verdict['influence'] | null;
  /** the last verdict's counterfactual run (the product changes taken out), if it ran */
  counterfactual: Verdict['counterfactual'] | null;
  needsHuman: boolean;
  humanAction: 'abandon' | null;
  autoApproved: string[];
  toolCalls: number;
  toolDenied: number;
  toolErrors: number;
  /** valid structured reflections the coder gave on retries (decisions.jsonl) */
  reflections: number;
  scripted: boolean;
  expected: TaskExpectation;
  asExpected: boolean;
  /** why not, when it is not */
  mismatch: string[];
  artifacts: string | null;
}

export interface KindTotals {
  runs: number;
  passed: number;
  failed: number;
}

export interface EvalTotals {
  suite: string;
  runs: number;
  passed: number;
  failed: number;
  passRate: number;
  asExpected: number;
  allAsExpected: boolean;
  scripted: boolean;
  byKind: Record<string, KindTotals>;
  byFailureClass: Record<FailureClass, number>;
  tokens: Usage;
  costUsd: number;
  turns: number;
  meanTurns: number;
  meanCostUsd: number;
  durationMs: number;
  autoApproved: number;
  abandoned: number;
}

/** One way of running (single or parallel attempts) over the tasks it ran. */
export interface ArmTotals {
  runs: number;
  passed: number;
  successRate: number;
  costUsd: number;
  tokens: Usage;
  totalTokens: number;
  wallMs: number;
  meanCostUsd: number;
  meanWallMs: number;
}

/** Parallel minus single. */
export interface ArmDelta {
  successRate: number;
  costUsd: number;
  totalTokens: number;
  meanWallMs: number;
}

export interface TaskComparison {
  task: string;
  single: ArmTotals;
  parallel: ArmTotals;
  delta: ArmDelta;
}

/** `kiln eval --attempts N`: every task run once alone and once as N attempts at once, side by side. */
export interface AttemptsComparison {
  attempts: number;
  tasks: TaskComparison[];
  single: ArmTotals;
  parallel: ArmTotals;
  delta: ArmDelta;
}

export interface EvalReport {
  totals: EvalTotals;
  runs: RunScore[];
  /** with --attempts N */
  attempts?: AttemptsComparison;
  /** with --review: the reviewer against the hidden ground truth, over all runs and for each way of running */
  reviews?: { all: ReviewTally; single: ReviewTally; parallel: ReviewTally };
}
