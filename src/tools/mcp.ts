/*
 * MCP tools as the model sees them: a server's tool admitted under its namespaced name, with its
 * schema checked and bounded, and the one line that names a call in logs, approvals and the Web
 * UI. The servers themselves are the worker's (activities/mcp-servers.ts); the policy judges the
 * calls (policy/mcp.ts). A run's list is fixed when it is first discovered.
 */
import { canonicalJson } from '../policy/canonical.js';
import { mcpToolName } from '../policy/mcp.js';
import type { ToolDefinition } from './schemas.js';

export interface McpToolInfo {
  /** `mcp__server__tool` */
  name: string;
  server: string;
  /** the server's own name for it */
  tool: string;
  description: string;
  inputSchema: ToolDefinition['input_schema'];
  /** the config names it as read-only: a call may be repeated after a crash */
  readOnly: boolean;
}

/** What a server may add to every model request: per tool, and tools per server. */
export const MCP_SCHEMA_MAX_CHARS = 16 * 1024;
export const MCP_DESCRIPTION_MAX_CHARS = 1024;
export const MCP_TOOLS_PER_SERVER = 64;
const MCP_SCHEMA_MAX_DEPTH = 12;
/** The model APIs' limit on a tool's name, which the namespaced name must meet. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function depth(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  for (const x of Object.values(v as Record<string, unknown>)) d = Math.max(d, depth(x));
  return d + 1;
}

/** A schema the model can be shown: plain JSON, an object's, not too large nor too deep. */
function schemaProblem(schema: unknown): string | undefined {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return 'its input schema is not a JSON object';
  const s = schema as Record<string, unknown>;
  if (s.type !== 'object') return 'its input schema is not of type "object"';
  if (s.properties !== undefined && (!s.properties || typeof s.properties !== 'object' || Array.isArray(s.properties)))
    return 'its input schema\'s "properties" is not an object';
  let text: string;
  try {
    text = canonicalJson(schema);
  } catch {
    return 'its input schema is not plain JSON';
  }
  if (text.length > MCP_SCHEMA_MAX_CHARS) return `its input schema has ${text.length} characters (at most ${MCP_SCHEMA_MAX_CHARS})`;
  if (depth(schema) > MCP_SCHEMA_MAX_DEPTH) return `its input schema nests deeper than ${MCP_SCHEMA_MAX_DEPTH} levels`;
  return undefined;
}

/** One tool a server listed, admitted to the run's catalog, or the reason it is not. */
export function admitMcpTool(
  server: string,
  raw: { name?: unknown; description?: unknown; inputSchema?: unknown },
  readOnlyTools: readonly string[],
): { ok: true; tool: McpToolInfo } | { ok: false; why: string } {
  const tool = typeof raw.name === 'string' ? raw.name : '';
  const name = mcpToolName(server, tool);
  if (!TOOL_NAME.test(tool) || !TOOL_NAME.test(name)) {
    return {
      ok: false,
      why: `tool ${JSON.stringify(tool.slice(0, 80))}: its name is not 1-64 of A-Z, a-z, 0-9, _ and - once namespaced as ${name.slice(0, 80)}`,
    };
  }
  const problem = schemaProblem(raw.inputSchema);
  if (problem) return { ok: false, why: `tool ${tool}: ${problem}` };
  const description = typeof raw.description === 'string' ? raw.description : '';
  const cut = description.length > MCP_DESCRIPTION_MAX_CHARS ? `${description.slice(0, MCP_DESCRIPTION_MAX_CHARS)}…` : description;
  const { $schema: _s, ...inputSchema } = JSON.parse(canonicalJson(raw.inputSchema)) as Record<string, unknown>;
  return {
    ok: true,
    tool: {
      name,
      server,
      tool,
      description: `(MCP server "${server}") ${cut || tool}`,
      inputSchema: inputSchema as McpToolInfo['inputSchema'],
      readOnly: readOnlyTools.includes(tool),
    },
  };
}

/** The definitions the model is shown, after the built-in tools. */
export function mcpDefinitions(tools: readonly McpToolInfo[]): ToolDefinition[] {
  return tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
}

/** One line: the tool and its arguments, which is what a person approves. */
export function describeMcpCall(name: string, input: unknown): string {
  const args = canonicalJson(input ?? {});
  return `${name} ${args.length > 300 ? `${args.slice(0, 300)}…` : args}`;
}
