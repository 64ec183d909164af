import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { BUILTIN_PROTECTED, unprotectProblem } from '../checks/protected.js';
import { KilnInputError } from '../shared/errors.js';
import { mcpConfigSchema } from './mcp.js';
import { twoPersonRuleProblem } from './two-person-rule.js';
import { describeIssues, parseJsonText } from '../shared/zod-error.js';

/**
 * Test files, runner configuration and CI of every ecosystem: the same set the verifier restores
 * from the base, so the edit tools refuse up front what verification would reject.
 */
export const DEFAULT_PROTECTED: string[] = [...BUILTIN_PROTECTED];

const stringList = z.array(z.string());

/** A list of strings each of which `problemOf` must find nothing wrong with; its issue names the string. */
function checkedList(problemOf: (s: string) => string | null | undefined) {
  return z.array(
    z.string().superRefine((s, ctx) => {
      const problem = problemOf(s);
      if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(s)}: ${problem}` });
    }),
  );
}

export const policyConfigSchema = z
  .object({
    /** globs (relative to the repo) the agent may write */
    writeAllow: stringList.default(['**']),
    /** globs the agent may not write unless the run allows protected writes, on top of Kiln's built-in set (which no list shrinks) */
    protected: stringList.default(DEFAULT_PROTECTED),
    /**
     * files (one path each, no globs) the agent may change although they are protected, e.g. a
     * golden fixture under tests/; from the repo's policy only when the repo is trusted
     */
    unprotect: checkedList(unprotectProblem).default([]),
    /** globs added to Kiln's built-in sensitive list (never read, never written) */
    sensitive: stringList.default([]),
    /** globs taken off the sensitive list: the only way to shrink it, so it is always explicit */
    allowSensitive: stringList.default([]),
    commands: z
      .object({
        allow: stringList.default([]),
        ask: stringList.default([]),
        deny: stringList.default([]),
      })
      .strict()
      .default({ allow: [], ask: [], deny: [] }),
    mode: z.enum(['strict', 'default', 'auto']).optional(),
    /** `required`: every run's verified patch is reviewed independently before it succeeds (`--review required`); a repo may require it, nobody may waive it */
    review: z.literal('required').optional(),
    /** who must answer an approval (src/policy/approvals.ts); a repo may add rules, never remove one */
    approvals: z
      .object({
        /** every approval needs an approver `kiln serve` authenticated; other decisions do not count */
        authenticated: z.boolean().default(false),
        /** kinds of call that need two different authenticated approvers: `command:<rule>`, `rule:<policy rule id>`, `tool:<name>`, `setup:<rule>` */
        twoPerson: checkedList(twoPersonRuleProblem).default([]),
        /**
         * the person who started a run may be one of its approvers; unset or false: an approval that
         * needs several people needs that many besides the starter. Only the user's policy enables it.
         */
        starterCounts: z.boolean().optional(),
        /** setup commands (they run with network) that wait for a person before they run, matched like commands.ask */
        setup: stringList.default([]),
        /** a patch changing more lines than `overLines` (added + removed) waits for `approvers` different people before the run may succeed */
        patch: z
          .object({ overLines: z.number().int().min(0), approvers: z.number().int().min(1).max(5).default(2) })
          .strict()
          .optional(),
      })
      .strict()
      .default({ authenticated: false, twoPerson: [], setup: [] }),
    /** MCP tool servers a run may start, and the rules their tools' calls are judged by (policy/mcp.ts) */
    mcp: mcpConfigSchema,
  })
  .strict();

export type PolicyConfig = z.infer<typeof policyConfigSchema>;

export class PolicyConfigError extends KilnInputError {
  override name = 'PolicyConfigError';
}

export function defaultPolicyConfig(): PolicyConfig {
  return policyConfigSchema.parse({});
}

/** Validates a parsed policy object; `source` names the file in error messages. */
export function parsePolicyConfig(raw: unknown, source = '.kiln/policy.json'): PolicyConfig {
  const r = policyConfigSchema.safeParse(raw);
  if (r.success) return r.data;
  throw new PolicyConfigError(`${source}: ${describeIssues(r.error, { input: raw })}`);
}

async function readIfExists(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Reads `.kiln/policy.json` from the repo; a missing file means the defaults.
 * YAML is not read (no YAML parser among Kiln's dependencies): a policy.yaml
 * without a policy.json is an error rather than silently ignored.
 */
export async function loadPolicyConfig(repoDir: string): Promise<PolicyConfig> {
  const jsonText = await readIfExists(join(repoDir, '.kiln', 'policy.json'));
  if (jsonText === null) {
    for (const y of ['policy.yaml', 'policy.yml']) {
      if ((await readIfExists(join(repoDir, '.kiln', y))) !== null) {
        throw new PolicyConfigError(`.kiln/${y}: YAML policies are not supported; write the same fields to .kiln/policy.json`);
      }
    }
    return defaultPolicyConfig();
  }
  return parsePolicyConfigText(jsonText, '.kiln/policy.json');
}

export function parsePolicyConfigText(text: string, source: string): PolicyConfig {
  return parseJsonText(text, policyConfigSchema, (problem) => new PolicyConfigError(`${source}: ${problem}`));
}
