/**
 * Who decides what, highest first: the operator (the worker's configuration), the user (CLI
 * flags and `$KILN_HOME/policy.json`), the repo (`.kiln/policy.json`, `.kiln/config`, AGENTS.md).
 * A repo's files may only tighten what the user allows; a loosening counts only when the user
 * trusted the repo's configuration (`kiln trust`), and an ignored one is said, never silent.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApprovalMode } from '../shared/types.js';
import { BUILTIN_PROTECTED } from '../checks/protected.js';
import { stricterPatchRule } from './approvals.js';
import { defaultPolicyConfig, loadPolicyConfig, parsePolicyConfigText, type PolicyConfig } from './config.js';
import { mergeMcp, type McpServerConfig } from './mcp.js';
import { checksFromAgentsMd, loadRepoConfig, type RepoConfig } from './repo-config.js';
import { repoTrust, type TrustState } from './trust.js';

export interface UserLayer {
  policy: PolicyConfig;
  /** the user-level policy file, when there is one */
  policyFile?: string;
  /** --check / --setup: empty means "not given" */
  checks: string[];
  setup: string[];
  approvalMode: ApprovalMode;
}

export interface RepoLayer {
  /** null: the repo has no .kiln/policy.json */
  policy: PolicyConfig | null;
  config: RepoConfig;
  /** the AGENTS.md (or CLAUDE.md) checks, when no .kiln/config names checks */
  agents?: { file: string; checks: string[] };
}

export interface RunSettings {
  policy: PolicyConfig;
  mode: ApprovalMode;
  checks: string[];
  setup: string[];
  /** `.kiln/config` include and link: they bring ignored files of the checkout in, so only when trusted */
  include: string[];
  link: string[];
  trust: TrustState;
  /** where each part came from, for the start banner */
  from: { policy: string; checks: string; setup: string };
  /** the repo's loosenings that were not applied, one line each */
  ignored: string[];
  /** the repo's own checks, named but not applied (not trusted): the run has none unless given */
  ignoredChecks?: { file: string; checks: string[] };
}

/**
 * `default` is the loosest mode; `strict` (asks before more) and `auto` (refuses what would ask)
 * each tighten it in their own way. The higher layer's mode stands unless it is `default`.
 */
const tighter = (higher: ApprovalMode, lower: ApprovalMode): ApprovalMode => (higher === 'default' ? lower : higher);
const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const list = (xs: readonly string[]) => xs.map((x) => JSON.stringify(x)).join(', ');

/** The repo's policy laid over the user's: additions that tighten always; loosenings only when trusted. */
export function mergePolicy(user: PolicyConfig, repo: PolicyConfig, trusted: boolean): { policy: PolicyConfig; ignored: string[] } {
  const ignored: string[] = [];
  const skip = (what: string) => ignored.push(`.kiln/policy.json ${what}: ignored, the repo's configuration is not trusted`);

  let writeAllow = user.writeAllow;
  if (!same(repo.writeAllow, ['**'])) {
    // narrowing from "everything" is always a tightening; replacing a list the user chose is not
    if (same(user.writeAllow, ['**']) || trusted) writeAllow = repo.writeAllow;
    else skip(`writeAllow [${list(repo.writeAllow)}] (the user's own list stands)`);
  }

  // a repo list replaces the user's: what it leaves out is an unprotection. Kiln's built-in set is
  // not the user's to give away and always applies (the verifier judges by it too); files are
  // released from it one by name, in `unprotect`.
  const leftOut = user.protected.filter((g) => !repo.protected.includes(g));
  const leftOutBuiltin = leftOut.filter((g) => BUILTIN_PROTECTED.includes(g));
  const unprotected = leftOut.filter((g) => !BUILTIN_PROTECTED.includes(g));
  let protectedGlobs = union(user.protected, repo.protected);
  if (unprotected.length) {
    if (trusted) protectedGlobs = protectedGlobs.filter((g) => !unprotected.includes(g));
    else skip(`protected (leaves out ${list(unprotected)})`);
  }
  if (leftOutBuiltin.length) {
    ignored.push(
      `.kiln/policy.json protected leaves out ${leftOutBuiltin.length} of Kiln's built-in globs (${list(leftOutBuiltin.slice(0, 3))}${leftOutBuiltin.length > 3 ? ', …' : ''}): ignored, the built-in set always applies; name single files in "unprotect"`,
    );
  }

  let unprotect = user.unprotect;
  if (repo.unprotect.length) {
    if (trusted) unprotect = union(user.unprotect, repo.unprotect);
    else skip(`unprotect [${list(repo.unprotect)}] (they stay protected)`);
  }

  let allowSensitive = user.allowSensitive;
  if (repo.allowSensitive.length) {
    if (trusted) allowSensitive = union(user.allowSensitive, repo.allowSensitive);
    else skip(`allowSensitive [${list(repo.allowSensitive)}]`);
  }

  let allow = user.commands.allow;
  if (repo.commands.allow.length) {
    if (trusted) allow = union(user.commands.allow, repo.commands.allow);
    else skip(`commands.allow [${list(repo.commands.allow)}]`);
  }

  // policies recorded before the mcp section have none
  const mcp = mergeMcp(user.mcp ?? { servers: {}, rules: [] }, repo.mcp ?? { servers: {}, rules: [] }, trusted);
  ignored.push(...mcp.ignored);
  const patchRule = stricterPatchRule(user.approvals.patch, repo.approvals.patch);
  const mode = repo.mode && user.mode ? tighter(user.mode, repo.mode) : (user.mode ?? repo.mode);
  return {
    policy: {
      writeAllow,
      protected: protectedGlobs,
      unprotect,
      sensitive: union(user.sensitive, repo.sensitive),
      allowSensitive,
      commands: { allow, ask: union(user.commands.ask, repo.commands.ask), deny: union(user.commands.deny, repo.commands.deny) },
      // only ever more: a repo adds approvers' rules, and what the user required stands
      approvals: {
        authenticated: user.approvals.authenticated || repo.approvals.authenticated,
        // loosening: the user's word, which a repo may take back but never give
        ...(user.approvals.starterCounts && repo.approvals.starterCounts !== false ? { starterCounts: true } : {}),
        twoPerson: union(user.approvals.twoPerson, repo.approvals.twoPerson),
        setup: union(user.approvals.setup, repo.approvals.setup),
        ...(patchRule ? { patch: patchRule } : {}),
      },
      mcp: mcp.mcp,
      ...(mode ? { mode } : {}),
      // tightening only, so an untrusted repo's requirement counts too
      ...(user.review === 'required' || repo.review === 'required' ? { review: 'required' as const } : {}),
    },
    ignored,
  };
}

/** Pure: the run's effective policy, checks and setup, and where each came from. */
export function resolveRunSettings(user: UserLayer, repo: RepoLayer, trust: TrustState): RunSettings {
  const trusted = trust === 'trusted';
  const why = trust === 'changed' ? 'changed since `kiln trust`' : 'not trusted';
  const ignored: string[] = [];
  const userPolicy = user.policyFile ? `user policy ${user.policyFile}` : 'Kiln defaults';

  let policy = user.policy;
  let policyFrom = userPolicy;
  if (repo.policy) {
    const merged = mergePolicy(user.policy, repo.policy, trusted);
    policy = merged.policy;
    ignored.push(...merged.ignored.map((l) => l.replace('is not trusted', `is ${why}`)));
    policyFrom = `${userPolicy} + .kiln/policy.json (${trusted ? 'trusted' : 'tightening only'})`;
  }
  // the CLI's mode is the user's; a repo may make it stricter, never looser
  const mode = policy.mode ? tighter(user.approvalMode, policy.mode) : user.approvalMode;

  let checks = user.checks;
  let checksFrom = '--check';
  let ignoredChecks: RunSettings['ignoredChecks'];
  if (!checks.length) {
    const repoChecks = repo.config.checks.length ? { file: '.kiln/config', checks: repo.config.checks } : repo.agents;
    checksFrom = 'none';
    if (repoChecks?.checks.length) {
      if (trusted) {
        checks = repoChecks.checks;
        checksFrom = `${repoChecks.file} (trusted)`;
      } else {
        ignoredChecks = repoChecks;
        ignored.push(`${repoChecks.file} checks [${list(repoChecks.checks)}]: ignored, the repo's configuration is ${why}; pass --check or run \`kiln trust\``);
      }
    }
  }

  let setup = user.setup;
  let setupFrom = setup.length ? '--setup' : 'none';
  if (!setup.length && repo.config.setup.length) {
    if (trusted) {
      setup = repo.config.setup;
      setupFrom = '.kiln/config (trusted)';
    } else {
      ignored.push(`.kiln/config setup [${list(repo.config.setup)}]: ignored, the repo's configuration is ${why}; pass --setup or run \`kiln trust\``);
    }
  }

  const brought: Record<'include' | 'link', string[]> = { include: [], link: [] };
  for (const key of ['include', 'link'] as const) {
    if (!repo.config[key].length) continue;
    if (trusted) brought[key] = repo.config[key];
    else ignored.push(`.kiln/config ${key} [${list(repo.config[key])}]: ignored, the repo's configuration is ${why}; run \`kiln trust\``);
  }
  return {
    policy,
    mode,
    checks,
    setup,
    ...brought,
    trust,
    from: { policy: policyFrom, checks: checksFrom, setup: setupFrom },
    ignored,
    ...(ignoredChecks ? { ignoredChecks } : {}),
  };
}

/** The lines `kiln run` prints at start: where the effective policy, checks and setup came from. */
export function describeRunSettings(s: RunSettings): string[] {
  const lines = [
    `policy: ${s.from.policy}; approval mode ${s.mode}`,
    `checks: ${s.checks.length ? s.checks.join(' · ') : '(none)'}  [from ${s.from.checks}]`,
    `setup:  ${s.setup.length ? s.setup.join(' · ') : '(none)'}  [from ${s.from.setup}]`,
  ];
  const servers = Object.entries(s.policy.mcp?.servers ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  // the hosts are shown where the repo's configuration is trusted and at every start: what its servers may reach
  const kind = (c: McpServerConfig) => (c.url ? `HTTP ${c.url}` : c.network ? `stdio, network: ${c.network.hosts.join(', ')}` : 'stdio');
  if (servers.length) lines.push(`mcp:    ${servers.map(([name, c]) => `${name} (${kind(c)})`).join(' · ')}`);
  if (s.trust !== 'trusted')
    lines.push(`repo configuration: ${s.trust === 'changed' ? 'CHANGED since it was trusted' : 'not trusted'} — it may tighten, not loosen`);
  for (const i of s.ignored) lines.push(`IGNORED ${i}`);
  return lines;
}

export interface LoadRunSettingsOptions {
  home: string;
  checks?: string[];
  setup?: string[];
  approvalMode: ApprovalMode;
  /** where AGENTS.md is read for checks (the run's worktree); default: the repo */
  agentsDir?: string;
  /** or how it is read: `kiln run` reads it at the run's base commit, as the worktree will hold it */
  readAgents?: (name: string) => Promise<string | undefined>;
}

/** Reads every layer from disk and resolves them; config errors throw the loaders' named errors. */
export async function loadRunSettings(repo: string, o: LoadRunSettingsOptions): Promise<RunSettings> {
  const userFile = join(o.home, 'policy.json');
  const userText = await readFile(userFile, 'utf8').catch(() => null);
  const user: UserLayer = {
    policy: userText === null ? defaultPolicyConfig() : parsePolicyConfigText(userText, userFile),
    ...(userText === null ? {} : { policyFile: userFile }),
    checks: o.checks ?? [],
    setup: o.setup ?? [],
    approvalMode: o.approvalMode,
  };
  const hasRepoPolicy = (await readFile(join(repo, '.kiln', 'policy.json')).catch(() => null)) !== null;
  const repoLayer: RepoLayer = { policy: hasRepoPolicy ? await loadPolicyConfig(repo) : null, config: await loadRepoConfig(repo) };
  let trust = repoTrust(repo, o.home);
  if (!repoLayer.config.checks.length) {
    for (const name of ['AGENTS.md', 'CLAUDE.md']) {
      const text = o.readAgents ? await o.readAgents(name) : await readFile(join(o.agentsDir ?? repo, name), 'utf8').catch(() => undefined);
      const checks = text ? checksFromAgentsMd(text) : [];
      if (!checks.length) continue;
      repoLayer.agents = { file: name, checks };
      // the trust hash covers the checkout's file; checks read elsewhere (a worktree at another base) must match it
      if ((o.agentsDir || o.readAgents) && trust === 'trusted' && (await readFile(join(repo, name), 'utf8').catch(() => undefined)) !== text) trust = 'changed';
      break;
    }
  }
  return resolveRunSettings(user, repoLayer, trust);
}
