import path from 'node:path';
import { KilnInputError } from '../shared/errors.js';

/**
 * The model a run uses unless told otherwise: the current Sonnet (Claude Sonnet 5.5,
 * "Latest" on Anthropic's models page as of Nov 2026). Change it here and nowhere else.
 * (`claude-sonnet-4-5` is deprecated in @anthropic-ai/sdk 1.14, which warns on every call.)
 */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** What a scripted response calls its model; priced as DEFAULT_MODEL (see pricing.ts). */
export const SCRIPTED_MODEL = 'scripted';

const SCRIPTED_PREFIX = 'scripted:';

/**
 * What a run names its model by: `scripted:/path/to/script.json` (the offline scripted server),
 * `anthropic:claude-…` or a bare Anthropic id, `openai:gpt-…` (OpenAI's Responses API), or
 * `openai-compatible@http://host:port/v1:model` (a server that speaks Chat Completions: vLLM,
 * Ollama, LM Studio…).
 */
export type ModelSpec = string;

/** The model APIs Kiln speaks to; each is one module behind the ModelClient interface. */
export type Provider = 'anthropic' | 'openai' | 'openai-compatible';

export type ParsedModelSpec =
  | { kind: 'scripted'; scriptPath: string }
  | { kind: 'api'; provider: 'anthropic' | 'openai'; model: string }
  | { kind: 'api'; provider: 'openai-compatible'; model: string; baseURL: string };

/** A model name Kiln cannot read: says what the accepted forms are. */
export class ModelSpecError extends KilnInputError {
  override readonly name = 'ModelSpecError';
}

const FORMS = 'anthropic:MODEL, openai:MODEL, openai-compatible@http://host:port:MODEL or scripted:FILE';

/** `http(s)://host[:port][/path]`, then `:` and the model (which may hold colons itself, as Ollama's `llama3.1:8b`). */
const COMPATIBLE = /^(https?:\/\/(?:\[[0-9a-fA-F:.]+\]|[^/:@\s[\]]+)(?::\d{1,5})?(?:\/[^:\s]*)?):(.*)$/;

export function isScriptedSpec(spec: ModelSpec): boolean {
  return spec.startsWith(SCRIPTED_PREFIX);
}

function compatibleSpec(spec: string, rest: string): ParsedModelSpec {
  const m = COMPATIBLE.exec(rest);
  if (!m)
    throw new ModelSpecError(
      `model ${JSON.stringify(spec)}: expected openai-compatible@http://host:port:MODEL (an http or https URL, then a colon and the model)`,
    );
  const model = m[2]!.trim();
  // `http://host:8000` alone reads as host and model "8000": a port with no model after it
  if (!model || (/^\d{1,5}$/.test(model) && !/:\d+(\/|$)/.test(m[1]!.replace(/^https?:\/\//, ''))))
    throw new ModelSpecError(`model ${JSON.stringify(spec)} names a server but no model: openai-compatible@URL:MODEL`);
  return { kind: 'api', provider: 'openai-compatible', baseURL: m[1]!.replace(/\/+$/, ''), model };
}

/** A relative script path is taken from `cwd`, so the server (which only sees absolute paths) finds it. */
export function parseModelSpec(spec: ModelSpec, cwd: string = process.cwd()): ParsedModelSpec {
  const trimmed = spec.trim();
  if (isScriptedSpec(trimmed)) {
    const file = trimmed.slice(SCRIPTED_PREFIX.length).trim();
    if (file === '') throw new ModelSpecError('model spec "scripted:" needs a script file: scripted:path/to/script.json');
    return { kind: 'scripted', scriptPath: path.resolve(cwd, file) };
  }
  if (trimmed === '') return { kind: 'api', provider: 'anthropic', model: DEFAULT_MODEL };
  if (trimmed.startsWith('openai-compatible@')) return compatibleSpec(trimmed, trimmed.slice('openai-compatible@'.length));
  // a word and a colon names a provider; ids such as Bedrock's `anthropic.claude-…-v1:0` are not one
  const prefix = /^([A-Za-z][A-Za-z-]*):(.*)$/.exec(trimmed);
  if (!prefix) return { kind: 'api', provider: 'anthropic', model: trimmed };
  const [, name, model] = prefix as unknown as [string, string, string];
  if (name === 'anthropic' || name === 'openai') {
    if (!model.trim()) throw new ModelSpecError(`model ${JSON.stringify(spec)} names no model after "${name}:"`);
    return { kind: 'api', provider: name, model: model.trim() };
  }
  if (name === 'openai-compatible')
    throw new ModelSpecError(`model ${JSON.stringify(spec)}: the server goes after an @: openai-compatible@http://host:port:MODEL`);
  throw new ModelSpecError(`model ${JSON.stringify(spec)}: no provider named "${name}"; name a model as ${FORMS}`);
}

/**
 * Whether a model takes `temperature` (and top_p/top_k). Anthropic removed sampling
 * parameters at Opus 4.7: Opus/Sonnet from 4.7 on, Haiku from 5 on, and every Fable and
 * Mythos model answer a non-default value with a 400. Expressed as a version cutoff so a
 * new Claude model is covered on day one; ids of other providers behind
 * ANTHROPIC_BASE_URL keep their temperature.
 */
export function acceptsSamplingParams(model: string): boolean {
  const id = model.toLowerCase().replace(/^.*?(claude-)/, '$1');
  if (!id.startsWith('claude-')) return true;
  if (/^claude-\d/.test(id)) return true; // claude-3-5-sonnet-… and older naming
  const m = /^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)/.exec(id);
  if (!m) return false; // fable, mythos, or a family this code does not know yet
  const major = Number(m[2]);
  const minor = m[3] === undefined ? 0 : Number(m[3]);
  const version = major + minor / 100;
  return m[1] === 'haiku' ? version < 5 : version < 4.07;
}
