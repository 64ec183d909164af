/*
 * An allowed MCP call, run once. A journal entry ("started") is written before the call goes to
 * the server; a retry that finds one and no result cannot know whether the call took effect:
 * a tool the config names read-only is called again, any other is refused with a result that
 * says so (a person approved one call, not two). A server that dies or does not answer within
 * its timeout fails the call, is stopped, and starts afresh on the next call.
 */
import { activityCancellation } from './heartbeat.js';
import type { RunToolResult } from '../shared/contracts.js';
import { readJson, writeJsonAtomic, type RunRecord } from '../store/run-files.js';
import type { McpToolInfo } from '../tools/index.js';
import type { ToolDeps } from './deps.js';
import { serverStart } from './mcp-catalog.js';
import { finishResult, startedPath, type Started, type StoredCall } from './tool-results.js';

/** What a stored result may hold of a binary part: its kind and size, never its bytes. */
function partText(part: Record<string, unknown>): string {
  if (part.type === 'text' && typeof part.text === 'string') return part.text;
  if (part.type === 'resource' && part.resource && typeof part.resource === 'object') {
    const r = part.resource as Record<string, unknown>;
    if (typeof r.text === 'string') return `[resource ${String(r.uri)}]\n${r.text}`;
    return `[resource ${String(r.uri)}: ${String(r.mimeType ?? 'binary')}, ${String(r.blob ?? '').length} base64 characters not shown]`;
  }
  if (part.type === 'resource_link') return `[resource link ${String(part.uri)}]`;
  const size = typeof part.data === 'string' ? `, ${part.data.length} base64 characters` : '';
  return `[${String(part.type)} ${String(part.mimeType ?? '')}${size} not shown]`;
}

/** The text the model reads of a tool result (redacted and capped by finishResult). */
export function mcpResultText(result: Record<string, unknown>): string {
  const parts = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
  const text = parts.map(partText).join('\n');
  if (text || result.structuredContent === undefined) return text || '(no content)';
  return JSON.stringify(result.structuredContent);
}

/** Why a call to a server failed, in words for the model; `died`: the connection is gone. */
function failureText(name: string, server: string, err: unknown, died: boolean, timeoutMs: number, stderr: string): string {
  const msg = String((err as Error)?.message ?? err).slice(0, 500);
  if (died)
    return `${name} failed: the MCP server "${server}" stopped during the call (${msg})${stderr ? `; it said: ${stderr.slice(-500)}` : ''}. It is restarted for the next call; whether this call took effect is unknown.`;
  if (/timed? ?out/i.test(msg))
    return `${name} failed: the MCP server "${server}" did not answer within ${timeoutMs} ms. It was stopped and starts again on the next call; whether this call took effect is unknown.`;
  return `${name} failed: ${msg}`;
}

export async function runMcpCall(deps: ToolDeps, rec: RunRecord, call: StoredCall, tool: McpToolInfo, summary: string): Promise<RunToolResult> {
  const { repo, runId } = rec.input;
  const sp = startedPath(repo, runId, call.id);
  if ((await readJson<Started>(sp)) && !tool.readOnly) {
    const text = `${call.name} was sent to its MCP server before the worker stopped, and no answer was kept: whether it took effect is unknown. Kiln does not send a call that may write twice. Check its effect (with a tool that only reads) before you call it again.`;
    return finishResult(deps, rec, call, text, true, 'none', summary);
  }
  await writeJsonAtomic(sp, { at: new Date().toISOString(), name: call.name } satisfies Started);
  const start = serverStart(deps, rec, tool.server);
  let server;
  try {
    server = await deps.mcp.get(start);
  } catch (err) {
    return finishResult(deps, rec, call, `${call.name} failed: ${String((err as Error)?.message ?? err)}`, true, 'none', summary);
  }
  // within the activity's own timeout (the run's command timeout and a minute), or a retry would find the call started
  const timeoutMs = Math.min(start.config.timeoutMs, rec.input.commandTimeoutMs);
  try {
    const signal = activityCancellation();
    const result = await server.client.callTool({ name: tool.tool, arguments: call.input as Record<string, unknown> }, undefined, {
      timeout: timeoutMs,
      ...(signal ? { signal } : {}),
    });
    return finishResult(deps, rec, call, mcpResultText(result), result.isError === true, 'none', summary);
  } catch (err) {
    const died = server.dead;
    // a server that hung or died is not kept: the next call gets a fresh one
    await deps.mcp.stop(runId, tool.server);
    return finishResult(deps, rec, call, failureText(call.name, tool.server, err, died, timeoutMs, server.stderr()), true, 'none', summary);
  }
}
