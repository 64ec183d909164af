import type { RunToolResult } from '../shared/contracts.js';
import { TOOLS } from './registry.js';
import type { ParsedToolInput } from './schemas.js';
import type { ToolHost, ToolSpec } from './spec.js';

type Parsed = Extract<ParsedToolInput, { ok: true }>;

/** The registry is keyed by name, so a call's input always fits its own spec. */
function specOf(call: Parsed): ToolSpec {
  return TOOLS[call.name] as unknown as ToolSpec;
}

/** One line for the log and the Web UI. */
export function describeCall(call: Parsed): string {
  return specOf(call).summary(call.value as never);
}

/** Run a parsed call that policy already allowed. */
export function runToolCall(host: ToolHost, call: Parsed): Promise<RunToolResult> {
  return specOf(call).run(host, call.value as never);
}
