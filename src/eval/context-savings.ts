/**
 * What Kiln's context builder saves: for each solved task, the input tokens the run really used
 * against a naive baseline that sends whole candidate files instead of ranked snippets. The first
 * message carries the context and is re-sent on every turn, so the baseline is
 * measured + turns × (naive context − Kiln's context).
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { buildContext, buildNaiveContext } from '../context/index.js';
import { CONTEXT_TOKEN_BUDGET } from '../activities/first-context.js';
import { makeFixtureRepo } from './fixture.js';
import type { EvalSuite, RunScore } from './types.js';

/** The naive baseline is not budgeted: it sends the candidate files whole. */
const NAIVE_BUDGET = 1_000_000;

export interface ContextSaving {
  task: string;
  solvedRuns: number;
  turns: number;
  /** input + cache read + cache write, mean over solved runs */
  inputTokens: number;
  kilnContextTokens: number;
  naiveContextTokens: number;
  naiveInputTokens: number;
  /** inputTokens / naiveInputTokens: below 1, Kiln's context is cheaper */
  ratio: number;
}

export async function contextSavings(suite: EvalSuite, runs: RunScore[]): Promise<{ tasks: ContextSaving[]; ratio: number | null }> {
  const tasks: ContextSaving[] = [];
  for (const task of suite.tasks) {
    const solved = runs.filter((r) => r.task === task.name && r.success && (r.parallel ?? 1) === 1);
    if (!solved.length) continue;
    const repo = await makeFixtureRepo(task);
    try {
      const ours = await buildContext({ workspace: repo, goal: task.goal, maxTokens: CONTEXT_TOKEN_BUDGET, includeRules: false });
      const naive = await buildNaiveContext({ workspace: repo, goal: task.goal, maxTokens: NAIVE_BUDGET, includeRules: false });
      const mean = (f: (r: RunScore) => number) => solved.reduce((a, r) => a + f(r), 0) / solved.length;
      const inputTokens = Math.round(mean((r) => r.tokens.input + r.tokens.cacheRead + r.tokens.cacheWrite));
      const turns = Math.round(mean((r) => r.turns));
      const naiveInputTokens = inputTokens + turns * (naive.tokens - ours.tokens);
      tasks.push({
        task: task.name,
        solvedRuns: solved.length,
        turns,
        inputTokens,
        kilnContextTokens: ours.tokens,
        naiveContextTokens: naive.tokens,
        naiveInputTokens,
        ratio: Math.round((inputTokens / naiveInputTokens) * 1000) / 1000,
      });
    } finally {
      await rm(dirname(repo), { recursive: true, force: true });
    }
  }
  const total = tasks.reduce((a, t) => a + t.inputTokens, 0);
  const naiveTotal = tasks.reduce((a, t) => a + t.naiveInputTokens, 0);
  return { tasks, ratio: naiveTotal ? Math.round((total / naiveTotal) * 1000) / 1000 : null };
}

export function formatSavings(s: { tasks: ContextSaving[]; ratio: number | null }): string {
  if (!s.tasks.length) return 'context: no solved task to measure';
  const rows = s.tasks.map(
    (t) =>
      `  ${t.task.padEnd(28)} ${String(t.inputTokens).padStart(8)} vs ${String(t.naiveInputTokens).padStart(8)} naive  (context ${t.kilnContextTokens} vs ${t.naiveContextTokens} tokens, ${t.turns} turns)  ratio ${t.ratio}`,
  );
  return ['context: input tokens per solved task, Kiln vs a naive baseline sending whole candidate files', ...rows, `  overall ratio ${s.ratio}`].join('\n');
}
