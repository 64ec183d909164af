/**
 * The independent review of a verified patch: a model call of its own (own system prompt, own
 * model, own output limit) over the goal, the patch, the tests and the verdict. It reads the
 * verified tree from git and never the run's conversation; it has no tool but its verdict.
 */
import type Anthropic from '@anthropic-ai/sdk';
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
import { redact } from '../redact/index.js';
import type { LedgerRef, RunRef } from '../shared/contracts.js';
import { estimateTokens } from '../shared/tokens.js';
import type { Review } from '../shared/types.js';
import { describeIssues } from '../shared/zod-error.js';
import { appendEvent, appendJsonl, loadRun, runDir, stateDir, writeWorkflowEvents } from '../store/run-files.js';
import type { ActivityDeps } from './deps.js';
import { OverBudgetError, temporalLedger, worstCase } from './budget.js';
import { ledgeredCall, MODEL_LEDGER_FILE, writeLedgerBacklog, type CallBudget } from './ledgered-call.js';
import { worktreeTree } from './verify-tree.js';

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
  const ledger = join(runDir(inp.repo, inp.runId), MODEL_LEDGER_FILE);
  const backlog: Record<string, unknown>[] = [];
  const call = `${inp.runId}:review:${inp.review}`;
  const message = reviewMessage(material);
  let res;
  try {
    res = await ledgeredCall(
      client,
      {
        system: REVIEW_SYSTEM,
        tools: [REVIEW_TOOL],
        forceTool: REVIEW_TOOL_NAME,
        messages: [{ role: 'user', content: message }],
        maxTokens: REVIEW_MAX_TOKENS,
      },
      {
        ledger,
        call,
        turn: inp.review,
        // its billed lines count in the run's spend like the coder's; the role tells them apart
        role: 'reviewer',
        start: { model: client.model },
        names: { error: `review ${inp.review}`, cancel: `review ${inp.review}` },
        backlog,
        ...(inp.ledger
          ? {
              budget: reviewBudget(
                deps,
                inp,
                inp.ledger,
                call,
                ledger,
                worstCase(client.model, estimateTokens(REVIEW_SYSTEM + message + JSON.stringify(REVIEW_TOOL)), REVIEW_MAX_TOKENS),
              ),
            }
          : {}),
      },
    );
  } catch (err) {
    // not sent: the workflow parks the run until a person raises the limit, then asks again
    if (!(err instanceof OverBudgetError)) throw err;
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
      overBudget: err.over,
    };
  }
  // lines a full disk kept out during the call; a disk still full fails the review, which is asked again
  await writeLedgerBacklog(ledger, backlog);
  const review: Review = { attempt: inp.attempt, ...verdictOf(res.content), tree, model: client.model, usage: res.usage, costUsd: res.costUsd };
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

/** The reviewer's call in the budget ledger: its worst case reserved, its bill settled, or let go unbilled. */
function reviewBudget(deps: ActivityDeps, inp: ReviewInput, ref: LedgerRef, key: string, file: string, need: { tokens: number; usd: number }): CallBudget {
  const port = deps.ledger ?? temporalLedger();
  const scope = { key, runId: inp.runId, repo: inp.repo, ...(ref.parent ? { parent: ref.parent } : {}) };
  return {
    async reserve() {
      const held = await port.reserve(ref, { ...scope, ...need });
      if (held.ok) return;
      await appendJsonl(file, { at: new Date().toISOString(), call: key, event: 'over_budget', role: 'reviewer', over: held.over });
      throw new OverBudgetError(held.over, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, 0);
    },
    settle: (b) => port.settle(ref, { ...scope, message: b.message, usage: b.usage, usd: b.costUsd }),
    release: () => port.release(ref, key),
  };
}
