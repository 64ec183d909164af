/**
 * `.kiln/config` in the user's repo: how to set a fresh worktree up and how to check it.
 * A bad file stops the run before it starts, naming the field.
 */
import { realpath } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { KilnInputError } from '../shared/errors.js';
import { loadJsonFile } from '../shared/zod-error.js';

/** `.kiln/config` (or the run's base commit) is wrong: no retry helps until the user fixes it. */
export class KilnConfigError extends KilnInputError {
  override name = 'KilnConfigError';
}

export const repoConfigSchema = z
  .object({
    /** commands run once in a fresh worktree, the only step with network access (e.g. "npm ci") */
    setup: z.array(z.string().min(1)).default([]),
    /** the checks the verifier runs and the stop gate requires */
    checks: z.array(z.string().min(1)).default([]),
    /** ignored paths copied from the user's checkout into the worktree (like .worktreeinclude) */
    include: z.array(z.string().min(1)).default([]),
    /** ignored paths symlinked instead of copied (read-only inside the sandbox) */
    link: z.array(z.string().min(1)).default([]),
    /** tool clutter kept out of the patch, added to the defaults; `!name` drops a default (docs/clutter.md) */
    exclude: z.array(z.string().min(1)).default([]),
    /** the coder's model for runs on this repo when neither `--model` nor KILN_MODEL names one (a provider:model name, never a script) */
    model: z.string().trim().min(1).max(500).optional(),
    /** the independent reviewer's model when review is on and neither `--review-model` nor KILN_REVIEW_MODEL names one */
    reviewModel: z.string().trim().min(1).max(500).optional(),
  })
  .strict();

export type RepoConfig = z.infer<typeof repoConfigSchema>;

export async function loadRepoConfig(repo: string): Promise<RepoConfig> {
  const file = join(repo, '.kiln', 'config');
  const config = await loadJsonFile(file, repoConfigSchema, (problem) => new KilnConfigError(`${file}: ${problem}`), {
    root: '(top level)',
    ifMissing: () => repoConfigSchema.parse({}),
  });
  // a script is a file on the worker's host: a repo may not name one for whoever runs it
  for (const key of ['model', 'reviewModel'] as const) {
    if (config[key]?.startsWith('scripted:'))
      throw new KilnConfigError(`${file}: ${key}: a repo's config names API models only; give a scripted model with --model`);
  }
  for (const p of [...config.include, ...config.link]) {
    if (p.startsWith('/') || p.split('/').includes('..')) {
      throw new KilnConfigError(`${file}: include/link: "${p}" must be a path inside the repo`);
    }
  }
  await realPathsInRepo(repo, [...config.include, ...config.link]);
  return config;
}

/**
 * Each entry that exists, as its real path, refusing any that resolves outside the repo: a
 * committed symlink (`vendor -> /var/tmp/x`, or a parent directory that is one) named in `link`
 * or `include` would otherwise bring a host path into the worktree and the sandbox.
 */
export async function realPathsInRepo(repo: string, rels: readonly string[]): Promise<string[]> {
  const root = await realpath(repo);
  const out: string[] = [];
  for (const rel of rels) {
    const real = await realpath(join(repo, rel)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (real === undefined) continue;
    const within = relative(root, real);
    if (within === '' || within === '..' || within.startsWith('../')) {
      throw new KilnConfigError(`${join(repo, '.kiln', 'config')}: include/link: "${rel}" resolves outside the repo (a symlink): name a real path inside it`);
    }
    out.push(real);
  }
  return out;
}

/**
 * The Commands section of AGENTS.md, in the seed's "- Test: pnpm test" form. Install lines are
 * setup, not checks, and are not run unless the user opts in through .kiln/config.
 */
export function checksFromAgentsMd(text: string): string[] {
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => /^#{1,6}\s*commands\b/i.test(l.trim()));
  if (start < 0) return [];
  const checks: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6}\s/.test(line.trim())) break;
    const m = /^\s*[-*]\s*([^:`]+):\s*`?([^`]+?)`?\s*$/.exec(line);
    if (!m) continue;
    const label = m[1]!.trim().toLowerCase();
    if (/install|setup|bootstrap|dev|start|serve|run app/.test(label)) continue;
    if (/test|check|lint|type|build|verify/.test(label)) checks.push(m[2]!.trim());
  }
  return checks;
}
