/**
 * After the checks passed on the verified tree: which of the patch's files the tests reached and
 * how (checks/influence.ts), and — when something other than product code was used — the
 * counterfactual run (checks/counterfactual.ts): the same tree with the product changes taken
 * out. A harness change or a pass the product change did not earn goes to a person.
 */
import { failedOnBase, passedWithoutProduct } from '../checks/counterfactual.js';
import { classifyChanges, counterfactualNeeded, loadTrace, productPaths, rewrittenByChecks, type Influence } from '../checks/influence.js';
import { git } from '../git/run.js';
import { judgeCheck } from '../checks/judge.js';
import type { ProtectedSet } from '../checks/protected.js';
import type { CheckTrace } from '../checks/trace.js';
import { scratchCache } from '../checks/caches.js';
import type { Sandbox } from '../sandbox/types.js';
import type { Verdict } from '../shared/types.js';
import { runCheck, runSetup, testFiles } from './check-runs.js';
import { heartbeating } from './heartbeat.js';
import { stateDir, type RunRecord } from '../store/run-files.js';
import type { Baseline } from './verify.js';
import { bringIncludes, buildVerifyTree, treeChanges, type VerifyTree } from './verify-tree.js';

const MAX_NAMED = 10;

export interface InfluenceJudgement {
  influence?: Influence[];
  counterfactual?: Verdict['counterfactual'];
  /** why the pass is not the product change's: empty when it is */
  problems: string[];
}

const names = (xs: string[]) => `${xs.slice(0, MAX_NAMED).join(', ')}${xs.length > MAX_NAMED ? ` and ${xs.length - MAX_NAMED} more` : ''}`;

export async function judgeInfluence(o: {
  sandbox: Sandbox;
  rec: RunRecord;
  repo: string;
  tree: VerifyTree;
  baseline: Baseline;
  verified: CheckTrace | undefined;
  protect: ProtectedSet | null;
  setup: string[];
  brought: { include: string[]; link: string[] };
  say: (t: string) => Promise<void>;
  runtime: string;
}): Promise<InfluenceJudgement> {
  const changes = await treeChanges(o.repo, o.rec.baseCommit, o.tree.tree);
  if (!changes.length) return { problems: [] };
  // without the base's trace every change to a file the base had counts as product code: the
  // counterfactual then tests only what the patch adds
  const influence: Influence[] = o.baseline.trace
    ? classifyChanges(changes, loadTrace(o.baseline.trace), o.verified)
    : changes.map((c) => ({ path: c.path, class: c.status === 'A' ? 'new' : 'product', how: 'the base was not traced: judged by whether the base had it' }));
  await o.say(`[influence: ${influence.map((i) => `${i.path} ${i.class} (${i.how})`).join('; ')}]\n`);

  const rewritten =
    o.baseline.trace && o.verified
      ? rewrittenByChecks(
          new Set((await git(o.repo, ['ls-tree', '-r', '-z', '--name-only', o.tree.tree])).split('\0').filter(Boolean)),
          loadTrace(o.baseline.trace),
          o.verified,
        )
      : [];
  const harness = [...influence.filter((i) => i.class === 'harness'), ...rewritten];
  if (harness.length) {
    return {
      influence: [...influence, ...rewritten],
      problems: [`the patch changes how the tests run (harness, a person decides): ${harness.map((h) => `${h.path}: ${h.how}`).join('; ')}`],
    };
  }
  const failing = o.baseline.checks.filter(failedOnBase);
  if (!failing.length || !counterfactualNeeded(influence, o.baseline.trace ? o.verified : undefined)) return { influence, problems: [] };

  const product = new Set(productPaths(influence));
  const without = await counterfactualRun(o, product);
  if ('note' in without && without.note) {
    await o.say(`[counterfactual: ${without.note}]\n`);
    return { influence, counterfactual: { ran: false, reverted: [...product], passedWithoutProduct: [], note: without.note }, problems: [] };
  }
  const passed = 'passed' in without ? without.passed : [];
  await o.say(
    `[counterfactual (product changes taken out: ${[...product].join(', ') || 'none'}): ${passed.length ? `still passes: ${names(passed)}` : 'fails again, as on the base'}]\n`,
  );
  const counterfactual = { ran: true, reverted: [...product], passedWithoutProduct: passed.slice(0, 20) };
  if (!passed.length) return { influence, counterfactual, problems: [] };
  const used = influence.filter((i) => i.class === 'new');
  return {
    influence,
    counterfactual,
    problems: [
      `what failed on the base passes without the patch's product changes (${names([...product]) || 'none'} taken out): ${names(passed)} — ` +
        `the patch changed how the tests run, not what they test (a person decides); the checks used: ${names(used.map((u) => u.path)) || 'files the trace could not place'}`,
    ],
  };
}

/** The verified tree with the product changes (and the protected paths) put back to the base, checked. */
async function counterfactualRun(o: Parameters<typeof judgeInfluence>[0], product: Set<string>): Promise<{ passed: string[] } | { note: string }> {
  const protect: ProtectedSet = {
    isProtected: (p) => product.has(p) || (o.protect?.isProtected(p) ?? false),
    sectionsProtected: (p) => o.protect?.sectionsProtected(p) ?? false,
    globs: o.protect?.globs ?? [],
  };
  const tree = await buildVerifyTree({
    repo: o.repo,
    worktree: o.rec.worktree,
    base: o.rec.baseCommit,
    scratchDir: stateDir(o.rec.input.repo, o.rec.input.runId),
    label: `${o.rec.input.runId}-cf`,
    protect,
  });
  const scratch = await heartbeating(() => scratchCache(o.repo));
  try {
    await bringIncludes(o.repo, tree.dir, o.brought);
    const setupProblem = await runSetup(o.sandbox, o.rec, tree.dir, o.setup, scratch.dir, o.say);
    if (setupProblem) return { note: `setup failed in the counterfactual tree (${setupProblem}); not judged` };
    const passed: string[] = [];
    for (const base of o.baseline.checks.filter(failedOnBase)) {
      const run = await runCheck(o.sandbox, o.rec, tree.dir, base.command, {
        cacheDir: scratch.dir,
        say: o.say,
        runtimeDir: o.runtime,
        isTest: testFiles(o.rec),
      });
      passed.push(...passedWithoutProduct(base, judgeCheck(run, base)));
    }
    return { passed };
  } finally {
    await tree.remove();
    await scratch.dispose();
  }
}
