/**
 * `kiln eval`: run a suite (the bundled one by default) and score every run. Exit 0 only when
 * every run is as its task expects: a good task must succeed, a failure task must fail the way
 * it says. With --json the last line is `{ "totals": …, "runs": […] }`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { kilnHome } from '../../embedded.js';
import { UsageError } from '../../shared/errors.js';
import { formatTable, formatTotals, renderMarkdown } from '../../eval/report.js';
import { runSuite } from '../../eval/runner.js';
import { comparisonMarkdown, formatComparison, formatReviews } from '../../eval/compare.js';
import { contextSavings, formatSavings } from '../../eval/context-savings.js';
import { loadSuite } from '../../eval/suite.js';
import { EXAMPLES_DIR } from './demo.js';
import { settings } from '../../settings.js';

export const BUNDLED_SUITE = join(EXAMPLES_DIR, 'eval');

export interface EvalFlags {
  suite?: string;
  repeat: string;
  model?: string;
  out?: string;
  task?: string[];
  attempts?: string;
  review?: string;
  reviewModel?: string;
  json?: boolean;
}

export async function runEval(o: EvalFlags, out: (s: string) => void): Promise<boolean> {
  const repeat = Number(o.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 100) throw new UsageError(`--repeat ${o.repeat}: expected a whole number from 1 to 100`);
  if (o.model?.startsWith('scripted:'))
    throw new UsageError("--model scripted:FILE would give every task the same transcript; leave --model out to use each task's own script");
  if (o.model && !process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) {
    throw new UsageError(`--model ${o.model} needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL); without it, leave --model out to run the scripted transcripts`);
  }
  const attempts = o.attempts === undefined ? undefined : Number(o.attempts);
  if (attempts !== undefined && (!Number.isInteger(attempts) || attempts < 2 || attempts > 8))
    throw new UsageError(`--attempts ${o.attempts}: expected a whole number from 2 to 8 (every task also runs as one attempt, to compare)`);
  if (o.review !== undefined && o.review !== 'on' && o.review !== 'required') throw new UsageError(`--review ${o.review}: use on or required`);
  const review = o.review as 'on' | 'required' | undefined;
  if (o.reviewModel !== undefined && !review) throw new UsageError('--review-model names the reviewer: add --review on or --review required');
  if (o.reviewModel && !o.reviewModel.startsWith('scripted:') && !process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) {
    throw new UsageError(
      `--review-model ${o.reviewModel} needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL); offline, use --review-model scripted:FILE (its "reviews" answer)`,
    );
  }
  const suite = await loadSuite(o.suite ?? BUNDLED_SUITE, o.task);
  const noScript = suite.tasks.filter((t) => !t.script).map((t) => t.name);
  if (!o.model && noScript.length) throw new UsageError(`${noScript.join(', ')}: no "script" in task.json; pass --model to run them on a real model`);
  const startedAt = new Date().toISOString();
  const outDir = resolve(o.out ?? join(kilnHome(), 'evals', startedAt.replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')));
  await mkdir(outDir, { recursive: true });
  const concurrency = settings().evalConcurrency ?? 2;

  out(
    `kiln eval: suite ${suite.name} (${suite.dir}) · ${suite.tasks.length} task(s) × ${repeat}${attempts ? ` × (1 attempt, ${attempts} at once)` : ''}${review ? ` · review ${review}${o.reviewModel ? ` by ${o.reviewModel}` : ''}` : ''} · ${o.model ? `model ${o.model}` : "SCRIPTED: each task's transcript plays the model; everything else is real"}`,
  );
  out('the eval approves every approval and abandons every run that needs a person (both recorded per run)');
  const report = await runSuite({ suite, repeat, model: o.model, outDir, concurrency, log: out, attempts, review, reviewModel: o.reviewModel });
  const scripted = report.totals.scripted;

  const savings = await contextSavings(suite, report.runs);
  const md = `${renderMarkdown(report, { startedAt, model: o.model ?? 'scripted', repeat })}\n${comparisonMarkdown(report)}\n## Context\n\n\`\`\`\n${formatSavings(savings)}\n\`\`\`\n`;
  await writeFile(join(outDir, 'report.md'), md);
  await writeFile(
    join(outDir, 'results.json'),
    JSON.stringify(
      {
        startedAt,
        suite: suite.dir,
        repeat,
        model: o.model ?? 'scripted',
        review: review ?? 'off',
        ...(o.reviewModel ? { reviewModel: o.reviewModel } : {}),
        ...report,
        context: savings,
      },
      null,
      2,
    ) + '\n',
  );
  out('');
  out(formatTable(report.runs));
  out('');
  out(formatTotals(report.totals));
  if (report.attempts) out(formatComparison(report.attempts, scripted));
  if (report.reviews) out(formatReviews(report.reviews, scripted));
  out(formatSavings(savings));
  out(`  report: ${join(outDir, 'report.md')}`);
  out(`  results: ${join(outDir, 'results.json')}`);
  if (o.json) out(JSON.stringify(report));
  return report.totals.allAsExpected;
}
