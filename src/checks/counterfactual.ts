/**
 * The counterfactual: the verified tree with the patch's product changes taken out (the base's
 * product code, everything else of the patch kept). If what failed on the base passes there, the
 * patch changed how the tests run rather than what they test — whatever file it did that through.
 */
import type { BaselineCheck, CheckJudgement } from './judge.js';

/**
 * What failed on the base and passes in the counterfactual run: the fail-to-pass tests by name,
 * or the check as a whole where the runner names none. Empty: the product change is what earned it.
 */
export function passedWithoutProduct(baseline: BaselineCheck, counterfactual: CheckJudgement): string[] {
  const failedBefore = Object.keys(baseline.results.tests).filter((n) => baseline.results.tests[n] === 'fail');
  if (failedBefore.length) return failedBefore.filter((n) => counterfactual.results.tests[n] === 'pass');
  const failedAsWhole = baseline.exitCode !== 0 || baseline.results.failed > 0;
  return failedAsWhole && counterfactual.passed ? [`\`${baseline.command}\` as a whole`] : [];
}

/** Whether a check failed on the base at all: a counterfactual has something to explain only then. */
export const failedOnBase = (b: BaselineCheck): boolean => !b.couldNotRun && (b.exitCode !== 0 || b.results.failed > 0);
