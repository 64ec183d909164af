/** What an eval reads (suite and tasks) and what it writes (one score per run, totals). */
import type { Phase, Usage, Verdict } from '../shared/types.js';
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
  budgets: TaskBudgets;
  expect: TaskExpectation;
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

export interface RunScore {
  task: string;
  kind: TaskKind;
  repeat: number;
  runId: string;
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

export interface EvalReport {
  totals: EvalTotals;
  runs: RunScore[];
}
