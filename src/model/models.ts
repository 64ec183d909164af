import path from 'node:path';

/**
 * The model a run uses unless told otherwise: the current Sonnet (Claude Sonnet 5.5,
 * "Latest" on Anthropic's models page as of Nov 2026). Change it here and nowhere else.
 * (`claude-sonnet-4-5` is deprecated in @anthropic-ai/sdk 1.14, which warns on every call.)
 */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** What a scripted response calls its model; priced as DEFAULT_MODEL (see pricing.ts). */
export const SCRIPTED_MODEL = 'scripted';

const SCRIPTED_PREFIX = 'scripted:';

/** `scripted:/path/to/script.json` (the offline scripted server) or an Anthropic model id. */
export type ModelSpec = string;

export type ParsedModelSpec = { kind: 'scripted'; scriptPath: string } | { kind: 'api'; model: string };

export function isScriptedSpec(spec: ModelSpec): boolean {
  return spec.startsWith(SCRIPTED_PREFIX);
}

/** A relative script path is taken from `cwd`, so the server (which only sees absolute paths) finds it. */
export function parseModelSpec(spec: ModelSpec, cwd: string = process.cwd()): ParsedModelSpec {
  const trimmed = spec.trim();
  if (isScriptedSpec(trimmed)) {
    const file = trimmed.slice(SCRIPTED_PREFIX.length).trim();
    if (file === '') throw new TypeError('model spec "scripted:" needs a script file: scripted:path/to/script.json');
    return { kind: 'scripted', scriptPath: path.resolve(cwd, file) };
  }
  return { kind: 'api', model: trimmed === '' ? DEFAULT_MODEL : trimmed };
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
