/**
 * The independent review of a verified patch: a model call of its own (own system prompt, own
 * model, own output limit) over the goal, the patch, the tests and the verdict. It reads the
 * verified tree from git and never the run's conversation; it has no tool but its verdict.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { CancelledFailure, Context } from '@temporalio/activity';
import { join } from 'node:path';
import { fileStem, isNoiseFile, isTestFile } from '../context/rank.js';
import {
  MAX_REVIEW_TESTS_CHARS,
  REVIEW_SYSTEM,
  REVIEW_TOOL,
  REVIEW_TOOL_NAME,
  reviewMessage,
  ReviewVerdictSchema,
  type ReviewMaterial,
} from '../context/review.js';
import { hardenedGit, type HardenedGit } from '../git/run.js';
import { ModelError, type BilledReply } from '../model/index.js';
import { redact } from '../redact/index.js';
import type { RunRef } from '../shared/contracts.js';
import type { Review } from '../shared/types.js';
import { describeIssues } from '../shared/zod-error.js';
import { appendEvent, appendJsonl, loadRun, runDir, stateDir, writeWorkflowEvents } from '../store/run-files.js';
import type { ActivityDeps } from './deps.js';
import { heartbeating } from './heartbeat.js';
import { MODEL_LEDGER_FILE } from './model-call.js';
import { worktreeTree } from './verify-tree.js';
import { temporalLedger, worstCase } from './budget.js';
import type { LedgerRef } from '../shared/contracts.js';
import { estimateTokens } from '../shared/tokens.js';

/** The reviewer's own output limit: a verdict with findings, not a rewrite. */
export const REVIEW_MAX_TOKENS = 4096;
/** Test files read for one review at most (the rest are named only by count). */
const MAX_TEST_FILES = 40;

export interface ReviewInput extends RunRef {
  attempt: number;
  /** this run's review number, from 1: the same review asked again (a retry) has the same number */
  review: number;
  /** the verified tree; absent: the worktree's now */
  tree?: string;
  /** the checks and what they said (the verdict's summary) */
  verdict: string;
  /** the budget ledger the reviewer's call reserves against (absent: none) */
  ledger?: LedgerRef;
}

export async function reviewPatch(deps: ActivityDeps, inp: ReviewInput): Promise<Review> {
  await writeWorkflowEvents(inp.repo, inp.runId, inp.events);
  const rec = await loadRun(inp.repo, inp.runId);
  const tree = inp.tree ?? (await worktreeTree(rec.worktree, rec.baseCommit, stateDir(inp.repo, inp.runId)));
  const material = await materialOf(await hardenedGit(rec.worktree), rec.baseCommit, tree, rec.input.goal, inp.verdict);
  const client = await deps.model(rec.input.reviewModel ?? rec.input.model, rec.input.runId);
  const call = `${inp.runId}:review:${inp.review}`;
  const ledger = join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE);
  await appendJsonl(ledger, { at: new Date().toISOString(), call, event: 'start', role: 'reviewer', model: client.model });
  const book = inp.ledger && { ref: inp.ledger, port: deps.ledger ?? temporalLedger(), parent: inp.ledger.parent ? { parent: inp.ledger.parent } : {} };
  if (book) {
    const need = worstCase(client.model, estimateTokens(REVIEW_SYSTEM + reviewMessage(material) + JSON.stringify(REVIEW_TOOL)), REVIEW_MAX_TOKENS);
    const held = await book.port.reserve(book.ref, { key: call, runId: inp.runId, repo: inp.repo, ...book.parent, ...need });
    if (!held.ok) {
      await appendJsonl(ledger, { at: new Date().toISOString(), call, event: 'over_budget', role: 'reviewer', over: held.over });
      const none = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      return {
        attempt: inp.attempt,
        decision: 'unavailable',
        summary: '',
        findings: [],
        model: client.model,
        usage: none,
        costUsd: 0,
        problem: 'over budget',
        overBudget: held.over,
      };
    }
  }
  let billed = false;
  let res;
  try {
    res = await heartbeating(() =>
      client.create(
        {
          system: REVIEW_SYSTEM,
          tools: [REVIEW_TOOL],
          forceTool: REVIEW_TOOL_NAME,
          messages: [{ role: 'user', content: reviewMessage(material) }],
          maxTokens: REVIEW_MAX_TOKENS,
        },
        {
          signal: cancellationSignal(),
          turn: inp.review,
          idempotencyKey: call,
          role: 'reviewer',
          // the ledger's spend is its billed lines (model-call.ts): the reviewer's count like the coder's
          onBilled: async (b: BilledReply) => {
            billed = true;
            await appendJsonl(ledger, { at: new Date().toISOString(), call, event: 'billed', role: 'reviewer', ...b });
            if (book)
              await book.port.settle(book.ref, {
                key: call,
                runId: inp.runId,
                repo: inp.repo,
                ...book.parent,
                message: b.message,
                usage: b.usage,
                usd: b.costUsd,
              });
          },
        },
      ),
    );
  } catch (err) {
    await appendJsonl(ledger, { at: new Date().toISOString(), call, event: 'failed', error: String((err as Error)?.message ?? err).slice(0, 300) }).catch(
      () => undefined,
    );
    if (book && !billed) await book.port.release(book.ref, call).catch(() => undefined);
    if (cancellationSignal()?.aborted) throw new CancelledFailure(`review ${inp.review}: the model call was cancelled`);
    throw err instanceof ModelError ? err.withContext(`review ${inp.review}`) : err;
  }
  await appendJsonl(ledger, { at: new Date().toISOString(), call, event: 'answered', stopReason: res.stopReason });
  const review: Review = { attempt: inp.attempt, ...verdictOf(res.content), model: client.model, usage: res.usage, costUsd: res.costUsd };
  await appendEvent(inp.repo, inp.runId, {
    type: 'review',
    review: inp.review,
    attempt: inp.attempt,
    decision: review.decision,
    findings: review.findings.length,
  });
  return review;
}

/** The reply's verdict; a reply without a readable one is `unavailable`, saying why (a person then decides). */
function verdictOf(content: Anthropic.ContentBlock[]): Pick<Review, 'decision' | 'summary' | 'findings' | 'problem'> {
  const call = content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use' && b.name === REVIEW_TOOL_NAME);
  if (!call) return { decision: 'unavailable', summary: '', findings: [], problem: `the reviewer answered without calling ${REVIEW_TOOL_NAME}` };
  const parsed = ReviewVerdictSchema.safeParse(call.input);
  if (!parsed.success)
    return {
      decision: 'unavailable',
      summary: '',
      findings: [],
      problem: `the reviewer's verdict is malformed: ${describeIssues(parsed.error, { input: call.input, max: 2 })}`,
    };
  // what the reviewer wrote is shown to people and to the coder's next attempt: masked like everything else
  const v = parsed.data;
  return {
    decision: v.decision,
    summary: redact(v.summary),
    findings: v.findings.map((f) => ({ kind: f.kind, ...(f.file ? { file: redact(f.file) } : {}), detail: redact(f.detail) })),
  };
}

/** The goal, the patch of the verified tree and its test files (the patch's own and its sources' first), redacted. */
async function materialOf(g: HardenedGit, base: string, tree: string, goal: string, verdict: string): Promise<ReviewMaterial> {
  const patch = redact(await g.run(['diff', '--no-color', '--no-renames', base, tree]));
  const changed = (await g.run(['diff', '--name-only', '--no-renames', base, tree])).split('\n').filter(Boolean);
  const stems = new Set(changed.filter((p) => !isTestFile(p)).map(fileStem));
  const all = (await g.run(['ls-tree', '-r', '--name-only', tree])).split('\n').filter((p) => p && isTestFile(p) && !isNoiseFile(p));
  const rank = (p: string) => (changed.includes(p) ? 0 : stems.has(fileStem(p)) ? 1 : 2);
  const ordered = all.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const tests: ReviewMaterial['tests'] = [];
  let chars = 0;
  for (const path of ordered.slice(0, MAX_TEST_FILES)) {
    if (chars >= MAX_REVIEW_TESTS_CHARS) break;
    const text = redact(await g.run(['cat-file', 'blob', `${tree}:${path}`]));
    chars += text.length;
    tests.push({ path, text });
  }
  return { goal: redact(goal), patch, tests, verdict: redact(verdict) };
}

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}
