/**
 * The counterfactual: the verified tree with the patch's product changes taken out (the base's
 * product code, everything else of the patch kept). If what failed on the base passes there, the
 * patch changed how the tests run rather than what they test — whatever file it did that through.
 */
import type { BaselineCheck, CheckJudgement } from './judge.js';
import { stableKey } from './results/identity.js';

/**
 * What failed on the base and passes in the counterfactual run: the fail-to-pass tests by name,
 * or the check as a whole where the runner names none. Empty: the product change is what earned it.
 */
export function passedWithoutProduct(baseline: BaselineCheck, counterfactual: CheckJudgement): string[] {
  const failedBefore = Object.keys(baseline.results.tests).filter((n) => baseline.results.tests[n] === 'fail');
  if (failedBefore.length) {
    // an id built from the clock or an address differs from run to run: such a test is matched by its
    // stable part, and only when that part names nothing that passed on the base (the cases that
    // passed there would pass here too and prove nothing)
    const byKey = (tests: Record<string, string>, status?: string) => {
      const m = new Map<string, string[]>();
      for (const [n, st] of Object.entries(tests)) if (!status || st === status) m.set(stableKey(n), [...(m.get(stableKey(n)) ?? []), st]);
      return m;
    };
    const now = byKey(counterfactual.results.tests);
    const passedOnBase = byKey(baseline.results.tests, 'pass');
    return failedBefore.filter((n) => {
      const exact = counterfactual.results.tests[n];
      if (exact) return exact === 'pass';
      const cases = now.get(stableKey(n));
      return !!cases?.length && cases.every((st) => st === 'pass') && !passedOnBase.has(stableKey(n));
    });
  }
  const failedAsWhole = baseline.exitCode !== 0 || baseline.results.failed > 0;
  return failedAsWhole && counterfactual.passed ? [`\`${baseline.command}\` as a whole`] : [];
}

/** Whether a check failed on the base at all: a counterfactual has something to explain only then. */
export const failedOnBase = (b: BaselineCheck): boolean => !b.couldNotRun && (b.exitCode !== 0 || b.results.failed > 0);
