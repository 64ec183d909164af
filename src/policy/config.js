import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
/** Test files and repo machinery: the agent may not change them unless a run allows it. */
export const DEFAULT_PROTECTED = [
    '**/*.test.*',
    '**/*.spec.*',
    '**/__tests__/**',
    '**/__snapshots__/**',
    'test/**',
    'tests/**',
    'spec/**',
    '.git/**',
    '.kiln/**',
    '.github/**',
    '.gitlab-ci.yml',
    '.circleci/**',
    '.buildkite/**',
    'azure-pipelines.yml',
    'Jenkinsfile',
];
const stringList = z.array(z.string());
export const policyConfigSchema = z
    .object({
    /** globs (relative to the repo) the agent may write */
    writeAllow: stringList.default(['**']),
    /** globs the agent may not write unless the run allows protected writes; replaces the default list */
    protected: stringList.default(DEFAULT_PROTECTED),
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
})
    .strict();
export class PolicyConfigError extends Error {
    name = 'PolicyConfigError';
}
export function defaultPolicyConfig() {
    return policyConfigSchema.parse({});
}
function fieldPath(path) {
    let out = '';
    for (const p of path)
        out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
    return out || '(root)';
}
function describe(issue) {
    if (issue.code === 'invalid_type')
        return `expected ${issue.expected}`;
    if (issue.code === 'unrecognized_keys')
        return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
    if (issue.code === 'invalid_value')
        return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    return issue.message;
}
/** Validates a parsed policy object; `source` names the file in error messages. */
export function parsePolicyConfig(raw, source = '.kiln/policy.json') {
    const r = policyConfigSchema.safeParse(raw);
    if (r.success)
        return r.data;
    const lines = r.error.issues.map((i) => `${source}: ${fieldPath(i.path)}: ${describe(i)}`);
    throw new PolicyConfigError(lines.join('\n'));
}
async function readIfExists(file) {
    try {
        return await readFile(file, 'utf8');
    }
    catch (e) {
        if (e.code === 'ENOENT')
            return null;
        throw e;
    }
}
/**
 * Reads `.kiln/policy.json` from the repo; a missing file means the defaults.
 * YAML is not read (no YAML parser among Kiln's dependencies): a policy.yaml
 * without a policy.json is an error rather than silently ignored.
 */
export async function loadPolicyConfig(repoDir) {
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
export function parsePolicyConfigText(text, source) {
    let raw;
    try {
        raw = JSON.parse(text);
    }
    catch (e) {
        throw new PolicyConfigError(`${source}: invalid JSON: ${e.message}`);
    }
    return parsePolicyConfig(raw, source);
}
