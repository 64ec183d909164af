/**
 * `kiln list` filters as one Temporal visibility query over Kiln's search attributes, so the same
 * filter works in `temporal workflow list --query` and the Web UI (docs/cluster.md lists them).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { git } from '../git/run.js';
import { WORKFLOW_TYPE } from '../shared/constants.js';
import { UsageError } from '../shared/errors.js';
import type { Phase } from '../shared/types.js';
import { ALL_PHASES } from '../workflows/machine.js';
import { KilnApprovers, KilnBudgetShare, KilnPhase, KilnRepo, KilnTouched, KilnWaitingSince } from '../shared/search-attributes.js';
import { duration } from './run-options.js';

export interface FleetFilters {
  phase?: string;
  /** the repo's path as the runs recorded it (absolute, the git top level) */
  repo?: string;
  waitingLongerThan?: string;
  overBudget?: string;
  touched?: string;
  approver?: string;
}

/** A query string literal; quotes and backslashes are refused rather than escaped, so no value can change the query. */
function literal(flag: string, v: string): string {
  if (!v.trim()) throw new UsageError(`${flag}: give a value`);
  if (/['"\\]/.test(v)) throw new UsageError(`${flag} ${v}: quotes and backslashes are not allowed in a filter value`);
  return `'${v}'`;
}

/** "0.8", "80%" → 0.8 */
function share(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(v.trim());
  const n = m ? Number(m[1]) / (m[2] ? 100 : 1) : NaN;
  if (!(n >= 0 && n <= 10)) throw new UsageError(`--over-budget ${v}: expected a share of the budget like 0.8 or 80%`);
  return n;
}

export function fleetQuery(f: FleetFilters, now: Date = new Date()): string {
  const parts = [`WorkflowType = '${WORKFLOW_TYPE}'`];
  if (f.phase !== undefined) {
    if (!ALL_PHASES.includes(f.phase as Phase)) throw new UsageError(`--phase ${f.phase}: expected one of ${ALL_PHASES.join(', ')}`);
    parts.push(`${KilnPhase.name} = '${f.phase}'`);
  }
  if (f.repo !== undefined) parts.push(`${KilnRepo.name} = ${literal('--repo', f.repo)}`);
  if (f.waitingLongerThan !== undefined) {
    const ms = duration(f.waitingLongerThan, '--waiting-longer-than', 0);
    parts.push(`${KilnWaitingSince.name} < '${new Date(now.getTime() - ms).toISOString()}'`);
  }
  // the runs keep their share in 5% steps, rounded down: >= finds every run at or past it
  if (f.overBudget !== undefined) parts.push(`${KilnBudgetShare.name} >= ${share(f.overBudget)}`);
  if (f.touched !== undefined) parts.push(`${KilnTouched.name} = ${literal('--touched', f.touched.replace(/^\.\//, ''))}`);
  if (f.approver !== undefined) parts.push(`${KilnApprovers.name} = ${literal('--approver', f.approver)}`);
  return parts.join(' AND ');
}

export function hasFilters(f: FleetFilters): boolean {
  return Object.values(f).some((v) => v !== undefined);
}

/**
 * A repo as runs record it: the git top level of a local directory; a path that is not here
 * (a repo on another worker host) is taken as written.
 */
export async function repoKey(dir: string): Promise<string> {
  const abs = resolve(dir);
  if (!existsSync(abs)) return dir;
  try {
    return (await git(abs, ['rev-parse', '--show-toplevel'])).trim();
  } catch {
    return abs;
  }
}
