/*
 * MCP tool servers in the policy: which servers a run may start (the `mcp` section of a policy
 * file) and how each call to one of their tools is judged. A server's tools reach the model only
 * as `mcp__<server>__<tool>`, so none can take a built-in tool's name; a call is judged by the
 * rules here, which ask by default.
 */
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { canonicalJson } from './canonical.js';
import { MCP_HOSTS_MAX, parseHostEntry } from './mcp-hosts.js';
import type { PolicyContext } from './types.js';
import { ask, deny, mostSevere, allow, type Verdict } from './verdict.js';

export const MCP_PREFIX = 'mcp__';
/** No `_` in a server's name: `mcp__a__b__c` then names server `a`'s tool `b__c`, never server `a__b`'s. */
const SERVER_NAME = /^[a-z][a-z0-9-]{0,23}$/;
/** An argument pattern is a regular expression over a value; kept short, they are matched on every call. */
const PATTERN_MAX_CHARS = 200;
/** The arguments of one call, as canonical JSON: larger is refused before any rule reads it. */
export const MCP_ARGS_MAX_CHARS = 64 * 1024;

const absolutePath = z.string().refine((p) => isAbsolute(p) && !p.includes('\0'), { message: 'expected an absolute path' });

const pattern = z
  .string()
  .max(PATTERN_MAX_CHARS)
  .superRefine((p, ctx) => {
    try {
      new RegExp(p, 'u');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)} is not a regular expression: ${(err as Error).message}` });
    }
  });

const hostEntry = z.string().superRefine((entry, ctx) => {
  const e = parseHostEntry(entry);
  if ('problem' in e) ctx.addIssue({ code: 'custom', message: `host ${JSON.stringify(entry.slice(0, 100))}: ${e.problem}` });
});

export const mcpServerSchema = z
  .strictObject({
    /** a stdio server: the program and its arguments, started in a sandbox of its own */
    command: z.array(z.string().min(1)).min(1).optional(),
    /** a streamable HTTP server: the worker connects to it; it runs wherever it runs */
    url: z
      .string()
      .refine((u) => /^https?:\/\//.test(u) && URL.canParse(u), { message: 'expected an http:// or https:// URL' })
      .optional(),
    /** environment of a stdio server (its values are masked in everything Kiln records) */
    env: z.record(z.string(), z.string()).default({}),
    /** what a stdio server sees of the run's worktree: nothing (default) or all of it, read-only */
    worktree: z.enum(['none', 'read-only']).default('none'),
    /** host paths a stdio server may read (its own program's files, when outside the system directories) */
    readOnlyPaths: z.array(absolutePath).default([]),
    /** tools that only read: a call to one of them may be repeated after a worker crash; the server's own hints are not trusted */
    readOnlyTools: z.array(z.string()).default([]),
    /** a call that has no answer by then is reported as timed out and the server restarted */
    timeoutMs: z.number().int().min(1000).max(600_000).default(60_000),
    /** what a stdio server may reach: these hosts only, through a proxy on the worker (sandbox/egress-proxy.ts); absent: no network */
    network: z.strictObject({ hosts: z.array(hostEntry).min(1).max(MCP_HOSTS_MAX) }).optional(),
  })
  .refine((s) => (s.command === undefined) !== (s.url === undefined), { message: 'give exactly one of "command" (stdio) or "url" (streamable HTTP)' })
  .refine((s) => s.network === undefined || s.command !== undefined, {
    message: '"network" is for a stdio server ("command"): a streamable HTTP server has whatever network it runs with',
  });

export type McpServerConfig = z.infer<typeof mcpServerSchema>;

export const mcpRuleSchema = z.strictObject({
  /** `server__tool`, with `*` for any run of characters: `files__*`, `*__read_*` */
  tool: z.string().min(1).max(200),
  decision: z.enum(['allow', 'ask', 'deny']),
  /** every named argument must match its pattern (the whole value; a non-string is matched as JSON) */
  args: z.record(z.string(), pattern).optional(),
});

export type McpRule = z.infer<typeof mcpRuleSchema>;

export const mcpConfigSchema = z
  .strictObject({
    servers: z
      .record(z.string(), mcpServerSchema)
      .default({})
      .superRefine((servers, ctx) => {
        for (const name of Object.keys(servers))
          if (!SERVER_NAME.test(name))
            ctx.addIssue({ code: 'custom', message: `server name ${JSON.stringify(name)}: use 1-24 of a-z, 0-9 and -, starting with a letter` });
      }),
    rules: z.array(mcpRuleSchema).default([]),
  })
  .default({ servers: {}, rules: [] });

export type McpConfig = z.infer<typeof mcpConfigSchema>;

export function mcpToolName(server: string, tool: string): string {
  return `${MCP_PREFIX}${server}__${tool}`;
}

/** `mcp__server__tool` split at its first separator after the prefix; undefined for any other name. */
export function splitMcpToolName(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith(MCP_PREFIX)) return undefined;
  const rest = name.slice(MCP_PREFIX.length);
  const at = rest.indexOf('__');
  if (at <= 0 || at + 2 >= rest.length) return undefined;
  return { server: rest.slice(0, at), tool: rest.slice(at + 2) };
}

function globRegex(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    'su',
  );
}

function argMatches(value: unknown, p: string): boolean {
  if (value === undefined) return false;
  const text = typeof value === 'string' ? value : canonicalJson(value);
  return new RegExp(`^(?:${p})$`, 'su').test(text);
}

function ruleMatches(rule: McpRule, server: string, tool: string, args: Record<string, unknown>): boolean {
  if (!globRegex(rule.tool).test(`${server}__${tool}`)) return false;
  return Object.entries(rule.args ?? {}).every(([k, p]) => Object.prototype.hasOwnProperty.call(args, k) && argMatches(args[k], p));
}

/**
 * One call to an MCP tool. Denied: a name that is not one of this run's discovered tools, input
 * that is not an object, or larger than MCP_ARGS_MAX_CHARS. Otherwise the most severe rule that
 * matches (tool and every argument pattern) decides, and with none matching a person is asked.
 */
export function judgeMcpCall(name: string, input: unknown, ctx: PolicyContext): Verdict {
  const parts = splitMcpToolName(name);
  if (!parts || !ctx.mcpTools?.includes(name)) {
    const known = ctx.mcpTools?.length ? ctx.mcpTools.join(', ') : 'none in this run';
    return deny('mcp.unknown-tool', `There is no MCP tool named ${name.slice(0, 120)} (MCP tools: ${known}).`);
  }
  if (!input || typeof input !== 'object' || Array.isArray(input)) return deny('input.invalid', `${name} needs its arguments as a JSON object.`);
  if (canonicalJson(input).length > MCP_ARGS_MAX_CHARS) {
    return deny('mcp.args-too-large', `The arguments of ${name} are larger than ${MCP_ARGS_MAX_CHARS} characters; send less.`);
  }
  const args = input as Record<string, unknown>;
  // a policy recorded before the mcp section has none
  const rules = (ctx.config.mcp?.rules ?? []).filter((r) => ruleMatches(r, parts.server, parts.tool, args));
  const verdicts = rules.map((r) => {
    const why = `the MCP rule ${JSON.stringify(r.tool)}${r.args ? ' with its argument patterns' : ''}`;
    if (r.decision === 'deny') return deny('mcp.rule', `${name} is refused by ${why}; do without it or ask the user.`);
    if (r.decision === 'ask') return ask('mcp.rule', `${name} needs a person's approval (${why}).`, `mcp:${name}`);
    return allow('mcp.rule', `${name} is allowed by ${why}.`);
  });
  return (
    mostSevere(verdicts) ??
    ask('mcp.default', `${name} is a tool of the MCP server "${parts.server}": a person approves each call unless a rule allows it.`, `mcp:${name}`)
  );
}

/**
 * The repo's MCP section laid over the user's: its servers start only when the repo is trusted
 * (a server is a program the repo would run on the worker), its deny and ask rules always count,
 * its allow rules only when trusted. The user's server wins a name both declare.
 */
export function mergeMcp(user: McpConfig, repo: McpConfig, trusted: boolean): { mcp: McpConfig; ignored: string[] } {
  const ignored: string[] = [];
  const servers = { ...user.servers };
  for (const [name, server] of Object.entries(repo.servers)) {
    if (Object.prototype.hasOwnProperty.call(servers, name)) continue;
    if (trusted) servers[name] = server;
    else ignored.push(`.kiln/policy.json mcp server "${name}": not started, the repo's configuration is not trusted; run \`kiln trust\``);
  }
  const looser = repo.rules.filter((r) => r.decision === 'allow');
  if (looser.length && !trusted)
    ignored.push(
      `.kiln/policy.json mcp rules allowing [${looser.map((r) => JSON.stringify(r.tool)).join(', ')}]: ignored, the repo's configuration is not trusted`,
    );
  const rules = [...user.rules, ...repo.rules.filter((r) => r.decision !== 'allow' || trusted)];
  return { mcp: { servers, rules }, ignored };
}
