/*
 * A run's MCP tools: discovered once from the servers its policy names, and kept in the run's
 * state (mcp-tools.json). Fixed from then on, so every turn shows the model the same tools (the
 * prompt cache holds), a server cannot add a tool in the middle of a run, and a retry of any
 * activity judges calls against the same list.
 */
import { join } from 'node:path';
import { redact } from '../redact/index.js';
import type { RunRecord } from '../store/run-files.js';
import { appendEvent, readJson, stateDir, writeJsonAtomic } from '../store/run-files.js';
import { admitMcpTool, MCP_TOOLS_PER_SERVER, type McpToolInfo } from '../tools/index.js';
import type { ActivityDeps } from './deps.js';
import { McpServerError, type McpServerStart } from './mcp-servers.js';
import { sandboxSensitive } from './run-policy.js';

interface StoredMcpTools {
  tools: McpToolInfo[];
  /** one line per server that did not start or tool that was not admitted */
  problems: string[];
}

const toolsFile = (rec: RunRecord) => join(stateDir(rec.input.repo, rec.input.runId), 'mcp-tools.json');

/** How the manager starts this run's server `name`. */
export function serverStart(deps: ActivityDeps, rec: RunRecord, name: string): McpServerStart {
  const { repo, runId } = rec.input;
  return {
    runId,
    name,
    config: rec.policy!.mcp.servers[name]!,
    worktree: rec.worktree,
    stateDir: stateDir(repo, runId),
    sandbox: () => deps.sandbox(rec.input.sandbox),
    ...(rec.policy ? { sensitive: sandboxSensitive(rec.policy) } : {}),
    warn: (text) => void appendEvent(repo, runId, { type: 'mcp', warning: text }).catch(() => undefined),
    refused: (target, why) => void appendEvent(repo, runId, { type: 'mcp', server: name, refused: redact(target), why: redact(why) }).catch(() => undefined),
  };
}

/** The servers a run may use: from its recorded policy only (older records have no mcp section). */
function serverNames(rec: RunRecord): string[] {
  return Object.keys(rec.policy?.mcp?.servers ?? {});
}

async function discoverServer(deps: ActivityDeps, rec: RunRecord, name: string, out: StoredMcpTools): Promise<void> {
  const config = rec.policy!.mcp.servers[name]!;
  try {
    const server = await deps.mcp.get(serverStart(deps, rec, name));
    const listed: unknown[] = [];
    let cursor: string | undefined;
    // a server that pages forever is cut at the cap
    do {
      const page = await server.client.listTools(cursor ? { cursor } : undefined, { timeout: config.timeoutMs });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && listed.length <= MCP_TOOLS_PER_SERVER);
    if (listed.length > MCP_TOOLS_PER_SERVER)
      out.problems.push(`MCP server "${name}" lists more than ${MCP_TOOLS_PER_SERVER} tools: only the first ${MCP_TOOLS_PER_SERVER} are offered`);
    for (const raw of listed.slice(0, MCP_TOOLS_PER_SERVER)) {
      const r = admitMcpTool(name, raw as Record<string, unknown>, config.readOnlyTools);
      if (r.ok) out.tools.push(r.tool);
      else out.problems.push(`MCP server "${name}": ${r.why}: left out`);
    }
  } catch (err) {
    const why = err instanceof McpServerError ? err.message : `MCP server "${name}" could not list its tools: ${String((err as Error)?.message ?? err)}`;
    out.problems.push(redact(why).slice(0, 1000));
  }
}

/** The run's MCP tools, discovered on first use; a server that does not start leaves its tools out, and says so. */
export async function runMcpTools(deps: ActivityDeps, rec: RunRecord): Promise<McpToolInfo[]> {
  const names = serverNames(rec);
  if (!names.length) return [];
  const kept = await readJson<StoredMcpTools>(toolsFile(rec));
  if (kept) return kept.tools;
  const out: StoredMcpTools = { tools: [], problems: [] };
  for (const name of names.sort()) await discoverServer(deps, rec, name, out);
  await writeJsonAtomic(toolsFile(rec), out);
  await appendEvent(rec.input.repo, rec.input.runId, { type: 'mcp', tools: out.tools.map((t) => t.name), problems: out.problems });
  return out.tools;
}

/** The run's MCP tools as already discovered (none before the first turn asked for them). */
export async function knownMcpTools(rec: RunRecord): Promise<McpToolInfo[]> {
  if (!serverNames(rec).length) return [];
  return (await readJson<StoredMcpTools>(toolsFile(rec)))?.tools ?? [];
}
