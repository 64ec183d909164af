/**
 * A run with nothing to verify its work, found before it starts: `kiln run` refuses it (exit 2)
 * rather than let the model do all of the work and then wait for a person. It asks the same
 * settings the run resolves (policy/precedence.ts), with AGENTS.md read at the run's base commit
 * as the run's worktree will hold it; no model is called. Detached and API starts are not asked.
 */
import { git } from '../git/run.js';
import type { RunSettings } from '../policy/precedence.js';
import { UsageError } from '../shared/errors.js';

/**
 * How the run will read AGENTS.md: from its base commit. Undefined when the base does not name a
 * commit: the run itself then says what is wrong with it.
 */
export async function agentsAtBase(repo: string, base: string | undefined): Promise<((name: string) => Promise<string | undefined>) | undefined> {
  const commit = (await git(repo, ['rev-parse', '--verify', '--quiet', `${base ?? 'HEAD'}^{commit}`]).catch(() => '')).trim();
  if (!commit) return undefined;
  return (name) => git(repo, ['cat-file', 'blob', `${commit}:${name}`]).catch(() => undefined);
}

/** The refusal of a run whose settings give it no checks, naming the three ways to start it. */
export function noChecksError(settings: RunSettings, repo: string, quote: (s: string) => string): UsageError {
  const named = settings.ignoredChecks;
  const why = named
    ? `${named.file} names checks (${named.checks.join(' · ')}) but the repo's configuration is ${settings.trust === 'changed' ? 'changed since `kiln trust`' : 'not trusted'}`
    : 'none given, and the repo names none (.kiln/config "checks", or a Commands section in AGENTS.md)';
  return new UsageError(
    `no checks: nothing would verify this run, so it would do all its work and then wait for a person (${why}). ` +
      `Start it with one of: --check CMD (the command that verifies the work, e.g. --check "npm test"); ` +
      `\`kiln trust --repo ${quote(repo)}\` (the repo's own checks apply); ` +
      `--unverified (the run may end without verification, marked UNVERIFIED)`,
  );
}
