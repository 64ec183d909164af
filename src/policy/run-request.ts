/**
 * Workflow input is a request, not authority: anyone who can reach the Temporal frontend can
 * start a `kilnRun` with any input, so the worker checks each request against its own operator
 * configuration before it touches a disk. Unknown fields are refused, not ignored: a field that
 * the worker does not know is a field it cannot bound.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { RunInput } from '../shared/types.js';
import { KilnInputError } from '../shared/errors.js';
import { runInputProblem, runInputSchema } from '../shared/run-input-schema.js';
import { DEFAULT_RUN_CEILINGS, overCeilings, runCeilingsFrom, type RunCeilings } from './run-ceilings.js';
import { settingsFrom } from '../settings.js';

/** What the worker's operator allows clients to ask for. Set on the worker, never in the input. */
export interface OperatorConfig {
  /** `kiln worker --allow-sandbox-off` / KILN_ALLOW_SANDBOX_OFF=1 */
  allowSandboxOff: boolean;
  /**
   * KILN_REPO_ROOTS (colon-separated directories, real paths): a request's repo must lie under
   * one of them. Unset: any repo this worker can read, since anyone who can reach Temporal may ask.
   */
  repoRoots?: string[];
  /** KILN_ALLOW_CLIENT_SETUP=0: a request's own setup commands (they run with network) are refused */
  allowClientSetup?: boolean;
  /** KILN_RUN_CEILINGS: the most a run may ask for (budgets, timeouts); unset, DEFAULT_RUN_CEILINGS */
  ceilings?: RunCeilings;
}

/** Bad operator settings stop the worker at start, naming the variable. */
export function operatorConfigFromEnv(env: NodeJS.ProcessEnv): OperatorConfig {
  const s = settingsFrom(env);
  const o: OperatorConfig = { allowSandboxOff: s.allowSandboxOff, ceilings: runCeilingsFrom(s.runCeilings) };
  if (s.repoRoots) o.repoRoots = s.repoRoots.map(realOrResolved);
  if (s.allowClientSetup !== undefined) o.allowClientSetup = s.allowClientSetup;
  return o;
}

/** A symlink under an allowed root may lead anywhere: roots and repos are compared as real paths. */
function realOrResolved(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

function under(p: string, root: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel));
}

/** A place a run on a repo reads or writes (activities/repo-places.ts), named for the refusal. */
export interface RepoPlace {
  what: string;
  path: string;
}

/** Where a path really is: through every symlink; a path not there yet, where it would be made. */
function realPlace(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    // not there (yet), or a link that leads nowhere
  }
  try {
    // a dangling symlink would be followed when the path is made: nowhere to place it
    if (lstatSync(p).isSymbolicLink()) return undefined;
  } catch {
    // not there at all: placed where its parent really is
  }
  const parent = dirname(p);
  if (parent === p) return p;
  const realParent = realPlace(parent);
  return realParent === undefined ? undefined : join(realParent, basename(p));
}

/**
 * KILN_REPO_ROOTS against every place a run on the repo touches, as real paths: a repo under a
 * root whose `.git` is a file or symlink to a repository outside ran on that repository.
 */
export function checkRepoPlaces(places: readonly RepoPlace[], operator: OperatorConfig): void {
  const roots = operator.repoRoots;
  if (!roots) return;
  for (const place of places) {
    const real = realPlace(place.path);
    if (real !== undefined && roots.some((root) => under(real, root))) continue;
    throw new RunRequestRefused(
      `run input refused by the worker: the repo's ${place.what} ${place.path}${real && real !== place.path ? ` (really ${real})` : ''} is outside the repositories this worker serves (KILN_REPO_ROOTS=${roots.join(':')}); a .git file, symlink or alternates that lead out of them are not followed`,
    );
  }
}

/** A request this worker's operator does not allow: asking again changes nothing (non-retryable). */
export class RunRequestRefused extends KilnInputError {
  override readonly name = 'RunRequestRefused';
}

/** The request as the worker will honour it, or RunRequestRefused naming what to change. */
export function checkRunRequest(raw: unknown, operator: OperatorConfig): RunInput {
  const problem = runInputProblem(raw);
  if (problem) throw new RunRequestRefused(`run input refused by the worker: ${problem}`);
  const r = runInputSchema.parse(raw);
  const over = overCeilings(r as RunInput, operator.ceilings ?? DEFAULT_RUN_CEILINGS);
  if (over.length) {
    throw new RunRequestRefused(
      `run input refused by the worker: ${over.join('; ')}; ask for less, or ask the worker's operator to raise it (KILN_RUN_CEILINGS)`,
    );
  }
  if (r.sandbox === 'off' && !operator.allowSandboxOff) {
    throw new RunRequestRefused(
      'run input refused by the worker: sandbox "off" is not allowed on this worker; its operator must start it with `kiln worker --allow-sandbox-off` (or KILN_ALLOW_SANDBOX_OFF=1)',
    );
  }
  if (operator.repoRoots && !operator.repoRoots.some((root) => under(realOrResolved(r.repo), root))) {
    throw new RunRequestRefused(
      `run input refused by the worker: repo ${r.repo} is outside the repositories this worker serves (KILN_REPO_ROOTS=${operator.repoRoots.join(':')}); run it from a checkout under one of them, or ask the worker's operator to add its directory`,
    );
  }
  if (operator.allowClientSetup === false && r.setup?.length) {
    throw new RunRequestRefused(
      "run input refused by the worker: setup commands from the client (--setup) are not allowed on this worker (KILN_ALLOW_CLIENT_SETUP=0); leave them out, or put them in the repo's .kiln/config and `kiln trust` it",
    );
  }
  return r as RunInput;
}
