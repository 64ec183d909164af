/**
 * The workflow's check of a run request, against the JSON Schema generated from the zod schema
 * (run-input-json-schema.ts): the same rules without zod in the workflow bundle. Only the
 * keywords that schema uses are known; any other makes the check fail closed ("the schema uses
 * X"), so a schema change this checker does not follow refuses every run in tests at once rather
 * than letting a rule go unchecked. Pure and deterministic: workflow code.
 */
import { RUN_INPUT_JSON_SCHEMA } from './run-input-json-schema.js';

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: readonly string[];
  additionalProperties?: boolean;
  items?: Schema;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  enum?: readonly unknown[];
}

const KNOWN = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'enum',
]);

/** The first problem with a request, as `field: what is wrong`; undefined when it is well formed. */
export function runInputProblemOf(raw: unknown): string | undefined {
  const problem = check(RUN_INPUT_JSON_SCHEMA as Schema, raw, []);
  return problem === undefined ? undefined : problem.slice(0, 500);
}

function check(s: Schema, v: unknown, path: string[]): string | undefined {
  const at = (what: string) => (path.length ? `${path.join('.')}: ${what}` : what);
  const unknownKeyword = Object.keys(s).find((k) => !KNOWN.has(k));
  if (unknownKeyword) return at(`the schema uses ${unknownKeyword}, which this check does not know`);
  if (s.enum && !s.enum.includes(v)) return at(`must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  switch (s.type) {
    case 'object':
      return object(s, v, path, at);
    case 'array': {
      if (!Array.isArray(v)) return at('must be an array');
      if (s.maxItems !== undefined && v.length > s.maxItems) return at(`must have at most ${s.maxItems} items`);
      for (let i = 0; i < v.length; i++) {
        const p = s.items ? check(s.items, v[i], [...path, String(i)]) : undefined;
        if (p !== undefined) return p;
      }
      return undefined;
    }
    case 'string':
      if (typeof v !== 'string') return at('must be a string');
      if (s.minLength !== undefined && v.length < s.minLength) return at(`must have at least ${s.minLength} characters`);
      if (s.maxLength !== undefined && v.length > s.maxLength) return at(`must have at most ${s.maxLength} characters`);
      if (s.pattern !== undefined && !new RegExp(s.pattern).test(v)) return at(`must match /${s.pattern}/`);
      return undefined;
    case 'integer':
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v)) return at('must be a number');
      if (s.type === 'integer' && !Number.isInteger(v)) return at('must be an integer');
      if (s.exclusiveMinimum !== undefined && !(v > s.exclusiveMinimum)) return at(`must be greater than ${s.exclusiveMinimum}`);
      if (s.minimum !== undefined && v < s.minimum) return at(`must be at least ${s.minimum}`);
      if (s.maximum !== undefined && v > s.maximum) return at(`must be at most ${s.maximum}`);
      return undefined;
    case 'boolean':
      return typeof v === 'boolean' ? undefined : at('must be true or false');
    default:
      return at(`the schema's type ${String(s.type)} is not one this check knows`);
  }
}

function object(s: Schema, v: unknown, path: string[], at: (what: string) => string): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return at('must be an object');
  const props = s.properties ?? {};
  const rec = v as Record<string, unknown>;
  if (s.additionalProperties === false) {
    const extra = Object.keys(rec).filter((k) => !Object.prototype.hasOwnProperty.call(props, k));
    if (extra.length) return at(`unknown field${extra.length > 1 ? 's' : ''} ${extra.join(', ')}`);
  }
  for (const k of s.required ?? []) if (rec[k] === undefined) return [...path, k].join('.') + ': is required';
  for (const [k, sub] of Object.entries(props)) {
    if (rec[k] === undefined) continue;
    const p = check(sub, rec[k], [...path, k]);
    if (p !== undefined) return p;
  }
  return undefined;
}
