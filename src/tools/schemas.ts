import { z } from 'zod';
import { TOOL_NAMES, isToolName, type ToolName } from './catalog.js';
import { TOOLS } from './registry.js';

export * from './inputs.js';

/*
 * The wire side of the tools: the definitions the model is shown and the parser of what it
 * sends, both from each tool's schema in the registry.
 */

export type ToolInputs = { [N in ToolName]: z.output<(typeof TOOLS)[N]['schema']> };

export interface ToolDefinition {
  name: ToolName;
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

/** Anthropic Messages API tool definitions, in TOOL_NAMES order. */
export function toolDefinitions(names: readonly ToolName[] = TOOL_NAMES): ToolDefinition[] {
  return names.map((name) => {
    const schema = TOOLS[name].schema;
    const json = cleanSchema(z.toJSONSchema(schema, { io: 'input', target: 'draft-7' })) as Record<string, unknown>;
    const { description, ...inputSchema } = json;
    return {
      name,
      description: typeof description === 'string' ? description : name,
      input_schema: inputSchema as ToolDefinition['input_schema'],
    };
  });
}

export type ParsedToolInput = { [N in ToolName]: { ok: true; name: N; value: ToolInputs[N] } }[ToolName];
export type ParseToolInputResult = ParsedToolInput | { ok: false; error: string };

function fieldName(p: readonly PropertyKey[]): string {
  if (p.length === 0) return 'input';
  return p.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join('');
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const field = fieldName(issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      const received = valueAt(input, issue.path);
      if (received === undefined) return `${field}: missing (expected ${issue.expected})`;
      return `${field}: expected ${issue.expected}, got ${describeValue(received)}`;
    }
    case 'unrecognized_keys':
      return `${field === 'input' ? '' : `${field}: `}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    case 'invalid_value':
      return `${field}: expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${describeValue(valueAt(input, issue.path))}`;
    case 'too_small':
      if (issue.origin === 'string') return `${field}: must not be empty`;
      if (issue.origin === 'array') return `${field}: needs at least ${issue.minimum} item(s)`;
      return `${field}: must be >= ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'array') return `${field}: at most ${issue.maximum} items`;
      return `${field}: must be <= ${issue.maximum}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

function valueAt(input: unknown, p: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const k of p) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/** Validate a tool call from the model; the error text is written to be sent back to it. */
export function parseToolInput(name: string, input: unknown): ParseToolInputResult {
  if (!isToolName(name)) {
    return { ok: false, error: `Unknown tool "${name}". Available tools: ${TOOL_NAMES.join(', ')}.` };
  }
  const schema = TOOLS[name].schema as z.ZodType;
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, name, value: r.data } as ParsedToolInput;
  const shape = TOOLS[name].schema.shape as Record<string, z.ZodType>;
  const required = Object.keys(shape).filter((k) => !shape[k]!.safeParse(undefined).success);
  const problems = r.error.issues.map((i) => `- ${describeIssue(i, input)}`);
  return {
    ok: false,
    error:
      `Invalid input for ${name}:\n${problems.join('\n')}\n` +
      `Fields: ${Object.keys(shape).join(', ')} (required: ${required.join(', ') || 'none'}).`,
  };
}
