/**
 * The wording of a `twoPerson` entry (policy `approvals.twoPerson`): checked when a policy file is
 * read (config.ts) and understood when a call is judged (approvals.ts). Kept apart from both so
 * that reading a policy does not load the command judges that approvals.ts builds on.
 */
import { TOOL_NAMES } from '../tools/catalog.js';

const KINDS = ['command', 'rule', 'tool', 'setup'] as const;

/** Why a twoPerson entry is not one Kiln understands, or undefined. */
export function twoPersonRuleProblem(rule: string): string | undefined {
  const m = /^(\w+):(.*)$/s.exec(rule);
  const kind = m?.[1];
  const arg = m?.[2]?.trim();
  if (!m || !KINDS.includes(kind as (typeof KINDS)[number]))
    return 'expected "command:<rule as in commands.ask>", "rule:<policy rule id>", "tool:<tool name>" or "setup:<rule matched against a setup command>"';
  if (!arg) return `"${kind}:" needs what follows the colon`;
  // an MCP tool (mcp__server__tool) is known only once a run discovers it: its shape is enough
  if (kind === 'tool' && !(TOOL_NAMES as readonly string[]).includes(arg) && !/^mcp__[a-z][a-z0-9-]*__\S+$/.test(arg))
    return `no tool is named ${arg} (tools: ${TOOL_NAMES.join(', ')}, or an MCP tool as mcp__server__tool)`;
  return undefined;
}
