/**
 * How the tests reach each file a patch changes, from what the checks did on the base and on the
 * verified tree (trace.ts) — not from the file's name or place:
 *
 * - product: the base's checks read it, or looked for it by name (a module that was missing):
 *   the code and data the tests exercise. Only these changes may earn a pass silently.
 * - harness: it changes how the tests run. It was executed in place of a program the base ran
 *   from elsewhere (a `node` early on PATH); or only the runner used it — processes that load no
 *   test file, such as npm reading an .npmrc or make its Makefile; or it is a top-level Python
 *   module named like one the base loaded from the toolchain (a `unittest.py` beside the tests).
 * - new: the checks used it, though not on the base (a new module, or one the base never
 *   reached). Whether it earned the pass is what the counterfactual run decides.
 * - untouched: the checks never reached it (docs, other packages): it cannot sway the verdict.
 *
 * Each class carries the observation that put the file there, for the person who reviews it.
 */
import { basename, dirname, extname } from 'node:path';
import { pythonModuleName, reached, used, type Access, type CheckTrace } from './trace.js';

export type InfluenceClass = 'product' | 'harness' | 'new' | 'untouched';

export interface Influence {
  path: string;
  class: InfluenceClass;
  /** what the checks did with it, in words */
  how: string;
}

export interface Change {
  /** git's A/M/D/T */
  status: string;
  path: string;
}

/** One trace for several checks: a file any of them reached counts. */
export function mergeTraces(traces: CheckTrace[]): CheckTrace {
  const out: CheckTrace = { inside: new Map(), programs: new Map(), outsideModules: new Set(), runnerOnly: new Set(), unplaced: 0 };
  const usedByTests = new Set<string>();
  for (const t of traces) {
    for (const [p, a] of t.inside) if (!t.runnerOnly.has(p) && (a.has('read') || a.has('write') || a.has('exec'))) usedByTests.add(p);
    for (const p of t.runnerOnly) out.runnerOnly.add(p);
    for (const [p, a] of t.inside) out.inside.set(p, new Set([...(out.inside.get(p) ?? []), ...a]));
    for (const [n, ps] of t.programs) out.programs.set(n, new Set([...(out.programs.get(n) ?? []), ...ps]));
    for (const m of t.outsideModules) out.outsideModules.add(m);
    out.unplaced += t.unplaced;
  }
  // runner-only in one check and code under test in another is code under test
  for (const p of usedByTests) out.runnerOnly.delete(p);
  return out;
}

/** A program the check ran from this changed file, which the base ran from another place. */
function runInPlaceOf(path: string, base: CheckTrace, verified: CheckTrace | undefined): string | undefined {
  const name = basename(path);
  if (!verified?.programs.get(name)?.has(path)) return undefined;
  const before = [...(base.programs.get(name) ?? [])].filter((p) => p !== path);
  return before[0];
}

/** A top-level Python module of the patch named like one the base loaded from the toolchain. */
function shadowedModule(path: string, base: CheckTrace): string | undefined {
  const top = dirname(path) === '.' || (basename(path) === '__init__.py' && dirname(dirname(path)) === '.');
  const mod = top ? pythonModuleName(path) : undefined;
  return mod && base.outsideModules.has(mod) ? mod : undefined;
}

/**
 * A file the base's checks read in the same folder with the same extension: a new `.go` file in a
 * package under test is compiled into it (the toolchain takes the folder), as a new `.java` under
 * a source root is. Resolution by folder is how those ecosystems reach product code.
 */
function siblingReadOnBase(path: string, base: CheckTrace): string | undefined {
  const dir = dirname(path);
  const ext = extname(path);
  if (!ext) return undefined;
  for (const [p, a] of base.inside) if (dirname(p) === dir && extname(p) === ext && p !== path && (a.has('read') || a.has('exec'))) return p;
  return undefined;
}

export function classifyChanges(changes: Change[], base: CheckTrace, verified: CheckTrace | undefined): Influence[] {
  return changes.map(({ status, path }) => {
    const shadowOf = runInPlaceOf(path, base, verified);
    if (shadowOf) return { path, class: 'harness', how: `executed by the check in place of ${shadowOf}, which the base ran` };
    if (verified?.runnerOnly.has(path) && !base.runnerOnly.has(path) && !(status !== 'A' && used(base, path)))
      return { path, class: 'harness', how: 'used only by the runner (processes that load no test file), not by the tests' };
    if (verified?.runnerOnly.has(path) && base.runnerOnly.has(path))
      return { path, class: 'harness', how: "the runner's own file: the base's checks used it only outside the tests" };
    const mod = !used(base, path) ? shadowedModule(path, base) : undefined;
    if (mod) return { path, class: 'harness', how: `a top-level module named like the toolchain's \`${mod}\`, which the base's check loaded` };
    if (status !== 'A' && used(base, path)) return { path, class: 'product', how: 'read by the check on the base' };
    if (reached(base, path)) return { path, class: 'product', how: 'looked for by the check on the base' };
    const sibling = status === 'A' && verified && used(verified, path) ? siblingReadOnBase(path, base) : undefined;
    if (sibling) return { path, class: 'product', how: `a new file beside ${sibling}, which the check read on the base, and used the same way` };
    if (!verified) return { path, class: 'new', how: 'the verified run was not traced' };
    if (used(verified, path) || verified.inside.get(path)?.has('probe')) return { path, class: 'new', how: 'used by the check, not reached on the base' };
    return { path, class: 'untouched', how: 'not reached by the check' };
  });
}

/** The changes a counterfactual run takes out: the product code, as the base's checks reached it. */
export const productPaths = (influence: Influence[]): string[] => influence.filter((i) => i.class === 'product').map((i) => i.path);

/**
 * Whether a counterfactual run can tell anything: some change that is not product code was used by
 * the checks (or the run could not be followed well enough to know it was not).
 */
export function counterfactualNeeded(influence: Influence[], verified: CheckTrace | undefined): boolean {
  const rest = influence.filter((i) => i.class !== 'product');
  if (!rest.length) return false;
  if (!verified || verified.unplaced > 0) return true;
  return rest.some((i) => i.class !== 'untouched');
}

/** A trace as JSON (Maps and Sets do not survive JSON.stringify). */
export interface StoredTrace {
  inside: Array<[string, string[]]>;
  programs: Array<[string, string[]]>;
  outsideModules: string[];
  runnerOnly?: string[];
  unplaced: number;
}

export const storeTrace = (t: CheckTrace): StoredTrace => ({
  inside: [...t.inside].map(([p, a]) => [p, [...a]]),
  programs: [...t.programs].map(([n, ps]) => [n, [...ps]]),
  outsideModules: [...t.outsideModules],
  runnerOnly: [...t.runnerOnly],
  unplaced: t.unplaced,
});

export const loadTrace = (s: StoredTrace): CheckTrace => ({
  inside: new Map(s.inside.map(([p, a]) => [p, new Set(a as Access[])])),
  programs: new Map(s.programs.map(([n, ps]) => [n, new Set(ps)])),
  outsideModules: new Set(s.outsideModules),
  runnerOnly: new Set(s.runnerOnly ?? []),
  unplaced: s.unplaced,
});

/**
 * Files the tree had before the checks ran that the verified run wrote and the base's run did not:
 * code under test that rewrites a test (or anything else the tests judge by) on disk while the
 * checks run changes how they run, whichever process did it.
 */
export function rewrittenByChecks(tracked: ReadonlySet<string>, base: CheckTrace, verified: CheckTrace): Influence[] {
  const out: Influence[] = [];
  for (const [path, access] of verified.inside) {
    if (!access.has('write') || !tracked.has(path) || base.inside.get(path)?.has('write')) continue;
    out.push({ path, class: 'harness', how: "written while the checks ran (the base's run did not write it)" });
  }
  return out;
}
