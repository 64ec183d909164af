import { z } from 'zod';
import { TOOL_NAMES, isToolName, type ToolName } from './catalog.js';
import { TOOLS } from './registry.js';
import { describeIssue } from '../shared/zod-error.js';
import { deepFreeze } from '../shared/freeze.js';
import { UNPARSED_INPUT } from '../shared/unparsed-input.js';

/*
 * The wire side of the tools: the definitions the model is shown and the parser of what it
 * sends, both from each tool's schema in the registry.
 */

export type ToolInputs = { [N in ToolName]: z.output<(typeof TOOLS)[N]['schema']> };

export interface ToolDefinition {
  /** a built-in tool's name, or an MCP tool's `mcp__server__tool` */
  name: string;
  description: string;
  input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; [k: string]: unknown };
}

/** Keys that add nothing for the model or that some schema consumers reject. */
function cleanSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(cleanSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === 'additionalProperties') continue;
    if ((k === 'maximum' && v === Number.MAX_SAFE_INTEGER) || (k === 'minimum' && v === Number.MIN_SAFE_INTEGER)) continue;
    out[k] = cleanSchema(v);
  }
  return out;
}

/**
 * Made once per process and list of names: converting the schemas costs ~1.5 ms of CPU, and a
 * turn needed them twice (the budget's estimate, the request). Frozen, as they are shared.
 */
const definitions = new Map<string, readonly ToolDefinition[]>();

/** Anthropic Messages API tool definitions, in TOOL_NAMES order. */
export function toolDefinitions(names: readonly ToolName[] = TOOL_NAMES): readonly ToolDefinition[] {
  const key = names.join(',');
  let defs = definitions.get(key);
  if (!defs) {
    defs = deepFreeze(names.map(definition));
    definitions.set(key, defs);
  }
  return defs;
}

function definition(name: ToolName): ToolDefinition {
  const schema = TOOLS[name].schema;
  const json = cleanSchema(z.toJSONSchema(schema, { io: 'input', target: 'draft-7' })) as Record<string, unknown>;
  const { description, ...inputSchema } = json;
  return {
    name,
    description: typeof description === 'string' ? description : name,
    input_schema: inputSchema as ToolDefinition['input_schema'],
  };
}

export type ParsedToolInput = { [N in ToolName]: { ok: true; name: N; value: ToolInputs[N] } }[ToolName];
export type ParseToolInputResult = ParsedToolInput | { ok: false; error: string };

/** Validate a tool call from the model; the error text is written to be sent back to it. */
export function parseToolInput(name: string, input: unknown): ParseToolInputResult {
  if (!isToolName(name)) {
    return { ok: false, error: `Unknown tool "${name}". Available tools: ${TOOL_NAMES.join(', ')}.` };
  }
  const unparsed = input && typeof input === 'object' ? (input as Record<string, unknown>)[UNPARSED_INPUT] : undefined;
  if (typeof unparsed === 'string') {
    const text = unparsed.length > 200 ? `${unparsed.slice(0, 200)}…` : unparsed;
    return {
      ok: false,
      error: `The input of this ${name} call is not valid JSON: ${JSON.stringify(text)}. Send the call again with its input as one JSON object.`,
    };
  }
  const schema = TOOLS[name].schema as z.ZodType;
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, name, value: r.data } as ParsedToolInput;
  const shape = TOOLS[name].schema.shape as Record<string, z.ZodType>;
  const required = Object.keys(shape).filter((k) => !shape[k]!.safeParse(undefined).success);
  const problems = r.error.issues.map((i) => `- ${describeIssue(i, { input, root: 'input' })}`);
  return {
    ok: false,
    error: `Invalid input for ${name}:\n${problems.join('\n')}\n` + `Fields: ${Object.keys(shape).join(', ')} (required: ${required.join(', ') || 'none'}).`,
  };
}
