import { mkdtemp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultPolicyConfig, parsePolicyConfig, parsePolicyConfigText, type PolicyConfig } from './config.js';
import type { ApprovalMode, PolicyContext, PolicyDecision } from './types.js';

/**
 * One line of a policy corpus. Besides the documented fields a case may set
 * `mode`, `checks`, `allowProtectedWrites`, `changed` and an inline `policy` object.
 */
interface PolicyCase {
  id: string;
  tool: string;
  input: unknown;
  expect: 'allow' | 'deny' | 'ask' | 'deny|ask';
  setup?: { files?: Record<string, string>; symlinks?: Record<string, string> };
  mode?: ApprovalMode;
  checks?: string[];
  allowProtectedWrites?: boolean;
  policy?: unknown;
  /** files (relative) the run is taken to have created or changed before this call */
  changed?: string[];
  /** the MCP tools (`mcp__server__tool`) the run is taken to have discovered */
  mcpTools?: string[];
}

export interface PolicyCaseResult {
  id: string;
  expect: string;
  got: PolicyDecision;
  ok: boolean;
}

export interface PolicyCasesReport {
  results: PolicyCaseResult[];
  passed: number;
  failed: number;
}

function substitute<T>(value: T, workspace: string): T {
  if (typeof value === 'string') return value.split('{{workspace}}').join(workspace) as T;
  if (Array.isArray(value)) return value.map((v) => substitute(v, workspace)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, workspace)])) as T;
  }
  return value;
}

function parseCases(text: string, file: string): PolicyCase[] {
  const cases: PolicyCase[] = [];
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (!t || t.startsWith('//')) return;
    let c: PolicyCase;
    try {
      c = JSON.parse(t) as PolicyCase;
    } catch (e) {
      throw new Error(`${file}:${i + 1}: invalid JSON: ${(e as Error).message}`, { cause: e });
    }
    if (typeof c.id !== 'string' || typeof c.tool !== 'string' || !['allow', 'deny', 'ask', 'deny|ask'].includes(c.expect)) {
      throw new Error(`${file}:${i + 1}: a case needs "id", "tool" and "expect" (allow, deny, ask or deny|ask)`);
    }
    cases.push(c);
  });
  return cases;
}

async function layOut(workspace: string, setup: PolicyCase['setup']): Promise<void> {
  for (const [rel, content] of Object.entries(setup?.files ?? {})) {
    const abs = join(workspace, rel);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, substitute(content, workspace));
  }
  for (const [rel, target] of Object.entries(setup?.symlinks ?? {})) {
    const abs = join(workspace, rel);
    await mkdir(dirname(abs), { recursive: true });
    await symlink(substitute(target, workspace), abs);
  }
}

/** The decision on one tool call: the tools own their judges, so they give it (evaluate in src/tools). */
export type Evaluate = (tool: string, input: unknown, ctx: PolicyContext) => Promise<PolicyDecision>;

/**
 * Runs a JSON-lines corpus of policy cases, each in a fresh temporary worktree, each call decided
 * by `evaluate`. `policyFile` replaces the default policy for cases without an inline one.
 */
export async function runCases(evaluate: Evaluate, file: string, opts: { policyFile?: string } = {}): Promise<PolicyCasesReport> {
  const cases = parseCases(await readFile(file, 'utf8'), file);
  const base: PolicyConfig = opts.policyFile ? parsePolicyConfigText(await readFile(opts.policyFile, 'utf8'), opts.policyFile) : defaultPolicyConfig();
  const results: PolicyCaseResult[] = [];
  for (const c of cases) {
    const workspace = await mkdtemp(join(tmpdir(), 'kiln-policy-case-'));
    try {
      await layOut(workspace, c.setup);
      const config = c.policy !== undefined ? parsePolicyConfig(c.policy, `${c.id}: policy`) : base;
      const got = await evaluate(c.tool, substitute(c.input, workspace), {
        workspace,
        config,
        mode: c.mode ?? config.mode ?? 'default',
        checks: c.checks ?? [],
        ...(c.allowProtectedWrites ? { allowProtectedWrites: true } : {}),
        ...(c.mcpTools ? { mcpTools: c.mcpTools } : {}),
        ...(c.changed ? { changedFiles: c.changed } : {}),
      });
      const ok = c.expect === 'deny|ask' ? got.decision !== 'allow' : got.decision === c.expect;
      results.push({ id: c.id, expect: c.expect, got, ok });
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }
  const passed = results.filter((r) => r.ok).length;
  return { results, passed, failed: results.length - passed };
}
