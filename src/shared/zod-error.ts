/**
 * One way to say what is wrong with a value zod refused, for every reader of it: the model (tool
 * input), a user's file (.kiln/policy.json, .kiln/config, a script, an eval task) or a request.
 * Each issue reads "where: what", with what was received when the input is at hand.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';

export interface IssueWording {
  /** the value zod checked: lets a line say what it got */
  input?: unknown;
  /** how the top level is named (default "(root)") */
  root?: string;
  /** a reader's own names for places ("step 3: tool_use[0].name"); '' leaves the place out */
  where?: (path: readonly PropertyKey[]) => string;
  /**
   * say where and what was expected, never what the text holds: for a file named by someone other
   * than its owner (a scripted model named in a run request), whose error that someone reads
   */
  hideContent?: boolean;
}

/** JSON.parse's complaint without the text it quotes ("Unexpected token 'r', "root:x:0"…"): the place only. */
function jsonSyntaxPlace(text: string, err: Error): string {
  const at = /at position (\d+)/.exec(err.message);
  if (!at) return /end of JSON input/.test(err.message) ? 'it ends early' : 'an unexpected character';
  const before = text.slice(0, Number(at[1])).split('\n');
  return `at line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

/** `steps[0].status`, or `root` for the value itself. */
export function issuePath(path: readonly PropertyKey[], root = '(root)'): string {
  if (path.length === 0) return root;
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join('');
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const k of path) {
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

function problem(issue: z.core.$ZodIssue, w: IssueWording): string {
  const known = 'input' in w;
  const got = () => (known ? `, got ${describeValue(valueAt(w.input, issue.path))}` : '');
  switch (issue.code) {
    case 'invalid_type':
      if (known && valueAt(w.input, issue.path) === undefined) return `missing (expected ${issue.expected})`;
      return `expected ${issue.expected}${got()}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}${got()}`;
    case 'too_small':
      if (issue.origin === 'string') return 'must not be empty';
      if (issue.origin === 'array') return `needs at least ${issue.minimum} item(s)`;
      return `must be >= ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'array') return `at most ${issue.maximum} items`;
      return `must be <= ${issue.maximum}`;
    default:
      return issue.message;
  }
}

/** One issue as "where: what". */
export function describeIssue(issue: z.core.$ZodIssue, w: IssueWording = {}): string {
  const where = w.where ? w.where(issue.path) : issuePath(issue.path, w.root);
  return where === '' ? problem(issue, w) : `${where}: ${problem(issue, w)}`;
}

/** Every issue on one line: the first `max`, then how many more. */
export function describeIssues(error: z.ZodError, w: IssueWording & { max?: number } = {}): string {
  const max = w.max ?? 3;
  const lines = error.issues.slice(0, max).map((i) => describeIssue(i, w));
  const more = error.issues.length > max ? ` (and ${error.issues.length - max} more)` : '';
  return lines.join('; ') + more;
}

/** Makes the error a reader throws from one line that says what is wrong (without the file's name). */
export type Refusal = (problem: string) => Error;

/** JSON text checked against `schema`; `refuse` builds the error for bad JSON or a refused value. */
export function parseJsonText<T extends z.ZodType>(text: string, schema: T, refuse: Refusal, w: IssueWording = {}): z.output<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw refuse(`not valid JSON (${w.hideContent ? jsonSyntaxPlace(text, err as Error) : (err as Error).message})`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw refuse(describeIssues(parsed.error, w.hideContent ? w : { input: raw, ...w }));
  return parsed.data;
}

/**
 * A JSON file checked against `schema`. A missing file gives `ifMissing()` when there is one
 * (a config file is optional), otherwise the refusal "no such file".
 */
export async function loadJsonFile<T extends z.ZodType>(
  file: string,
  schema: T,
  refuse: Refusal,
  opts: IssueWording & { ifMissing?: () => z.output<T> } = {},
): Promise<z.output<T>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && opts.ifMissing) return opts.ifMissing();
    throw refuse(code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? (err as Error).message})`);
  }
  const { ifMissing: _, ...wording } = opts;
  return parseJsonText(text, schema, refuse, wording);
}
