/** `kiln run` options → the workflow's RunInput, validated here so bad input never starts a run. */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadRepoConfig } from '../policy/repo-config.js';
// the modules themselves, not the packages' indexes: `kiln run` must not load the model SDK or
// the shell parser just to check its options
import { DEFAULT_MODEL, isScriptedSpec, ModelSpecError, parseModelSpec } from '../model/models.js';
import { loadScript } from '../model/script.js';
import { loadPolicyConfig } from '../policy/config.js';
import type { RunInput } from '../shared/types.js';
import { gitResult } from '../git/run.js';
import { UsageError } from '../shared/errors.js';
import { shellQuote } from '../sandbox/shell-quote.js';
import { settingsFrom } from '../settings.js';

export interface RunFlags {
  repo?: string;
  goal?: string;
  check?: string[];
  setup?: string[];
  model?: string;
  id?: string;
  base?: string;
  sandbox?: string;
  approvalMode?: string;
  allowTestEdits?: boolean;
  unverified?: boolean;
  /** more paths (globs) the model may not change, on top of the repo's and Kiln's protected set */
  protect?: string[];
  approvalTimeout?: string;
  humanTimeout?: string;
  maxTurns?: string;
  maxTokens?: string;
  maxUsd?: string;
  maxWall?: string;
  maxOutputTokens?: string;
  temperature?: string;
  /** off, on or required: an independent review of the verified patch before it succeeds */
  review?: string;
  reviewModel?: string;
  /** parallel attempts: this many child runs at once, the first to succeed wins */
  attempts?: string;
  /** the children's models, in turn */
  attemptModel?: string[];
  heartbeatTimeout?: string;
  commandTimeout?: string;
}

export const DEFAULTS = {
  approvalTimeoutMs: 24 * 3600_000,
  humanTimeoutMs: 7 * 24 * 3600_000,
  maxTurns: 60,
  maxTokens: 3_000_000,
  maxUsd: 10,
  maxWallMs: 2 * 3600_000,
  maxOutputTokens: 8192,
  heartbeatTimeoutMs: 30_000,
  commandTimeoutMs: 10 * 60_000,
};

export function newRunId(): string {
  const d = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `run-${d}-${randomBytes(3).toString('hex')}`;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$/;

export async function buildRunInput(f: RunFlags, env: NodeJS.ProcessEnv = process.env): Promise<RunInput> {
  if (!f.repo) throw new UsageError('--repo DIR is required: the git repository to work on');
  const repoArg = resolve(f.repo);
  if (!existsSync(repoArg) || !statSync(repoArg).isDirectory()) throw new UsageError(`--repo ${shellQuote(f.repo)}: no such directory`);
  // one git process for both questions (a run's start waits for each): the top level is printed
  // even when the base is no commit, and nothing at all outside a repository
  const found = await gitResult(repoArg, ['rev-parse', '--show-toplevel', '--verify', '--end-of-options', `${f.base ?? 'HEAD'}^{commit}`]).catch(
    () => undefined,
  );
  const [repo, commit] = (found?.stdout ?? '').split('\n').map((l) => l.trim());
  if (!repo) throw new UsageError(`--repo ${shellQuote(f.repo)}: not a git repository (run \`git init\` and commit first)`);
  if (found?.exitCode !== 0 || !commit)
    throw new UsageError(f.base ? `--base ${f.base}: not a commit in ${shellQuote(repo)}` : `${shellQuote(repo)} has no commits yet: commit something first`);
  const goal = (f.goal ?? '').trim();
  if (!goal) throw new UsageError('--goal TEXT is required and must not be empty: say what the change should achieve');
  if (f.id !== undefined && !ID_RE.test(f.id)) throw new UsageError(`--id ${f.id}: use letters, digits, ".", "_" or "-" (at most 101 characters)`);

  const config = await loadRepoConfig(repo);
  const coder = chosenModel([f.model, '--model'], [settingsFrom(env).model, 'KILN_MODEL'], [config.model, '.kiln/config "model"']);
  const model = await modelSpecOf(...(coder ?? [DEFAULT_MODEL, '--model']), env);
  const review = f.review ?? 'off';
  if (review !== 'off' && review !== 'on' && review !== 'required') throw new UsageError(`--review ${review}: use off (default), on or required`);
  if (f.reviewModel !== undefined && review === 'off') throw new UsageError('--review-model names the reviewer: add --review on or --review required');
  const reviewer = chosenModel(
    [f.reviewModel, '--review-model'],
    [settingsFrom(env).reviewModel, 'KILN_REVIEW_MODEL'],
    [config.reviewModel, '.kiln/config "reviewModel"'],
  );
  const reviewModel = review === 'off' || !reviewer ? undefined : await modelSpecOf(...reviewer, env);
  const attempts = f.attempts === undefined ? 1 : int(f.attempts, '--attempts', 1);
  if (attempts > 8) throw new UsageError(`--attempts ${f.attempts}: at most 8 attempts run at once`);
  if (f.attemptModel?.length && attempts < 2) throw new UsageError('--attempt-model names the models of parallel attempts: add --attempts N (2 or more)');
  const attemptModels = await Promise.all((f.attemptModel ?? []).map((m) => modelSpecOf(m, '--attempt-model', env)));
  await loadPolicyConfig(repo);

  const sandbox = f.sandbox ?? 'bwrap';
  if (sandbox !== 'bwrap' && sandbox !== 'off') throw new UsageError(`--sandbox ${sandbox}: use "bwrap" (default) or "off"`);
  const approvalMode = f.approvalMode ?? 'default';
  if (!['strict', 'default', 'auto'].includes(approvalMode)) throw new UsageError(`--approval-mode ${approvalMode}: use strict, default or auto`);

  return {
    runId: f.id ?? newRunId(),
    repo,
    goal,
    base: f.base,
    checks: f.check ?? [],
    setup: f.setup ?? [],
    model,
    maxTokens: int(f.maxOutputTokens, '--max-output-tokens', DEFAULTS.maxOutputTokens),
    temperature: f.temperature === undefined ? undefined : num(f.temperature, '--temperature', 0),
    sandbox,
    approvalMode: approvalMode as RunInput['approvalMode'],
    allowTestEdits: f.allowTestEdits ?? false,
    ...(f.unverified ? { allowUnverified: true } : {}),
    ...(review !== 'off' ? { review } : {}),
    ...(reviewModel ? { reviewModel } : {}),
    ...(attempts > 1 ? { attempts } : {}),
    ...(attemptModels.length ? { attemptModels } : {}),
    ...(f.protect?.length ? { protect: f.protect } : {}),
    approvalTimeoutMs: duration(f.approvalTimeout, '--approval-timeout', DEFAULTS.approvalTimeoutMs),
    humanTimeoutMs: duration(f.humanTimeout, '--human-timeout', DEFAULTS.humanTimeoutMs),
    budgets: {
      maxTurns: int(f.maxTurns, '--max-turns', DEFAULTS.maxTurns),
      maxTokens: int(f.maxTokens, '--max-tokens', DEFAULTS.maxTokens),
      maxUsd: num(f.maxUsd, '--max-usd', DEFAULTS.maxUsd),
      maxWallMs: duration(f.maxWall, '--max-wall', DEFAULTS.maxWallMs),
    },
    maxAttempts: 3,
    heartbeatTimeoutMs: duration(f.heartbeatTimeout, '--heartbeat-timeout', DEFAULTS.heartbeatTimeoutMs),
    commandTimeoutMs: duration(f.commandTimeout, '--command-timeout', DEFAULTS.commandTimeoutMs),
  };
}

function int(v: string | undefined, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${flag} ${v}: expected a positive whole number`);
  return n;
}

function num(v: string | undefined, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} ${v}: expected a number ≥ 0`);
  return n;
}

/** "90s", "15m", "2h", "3d" or plain milliseconds. */
export function duration(v: string | undefined, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(v.trim());
  if (!m) throw new UsageError(`${flag} ${v}: expected a duration like 500ms, 90s, 15m, 2h or 3d`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms'];
  const n = Math.round(Number(m[1]) * unit);
  if (n <= 0) throw new UsageError(`${flag} ${v}: must be more than zero`);
  return n;
}

/**
 * A role's model and where it was named: the flag, else the user's environment, else the repo's
 * `.kiln/config` (a repo suggests, its user decides); none named is the built-in default for the
 * coder, the run's model for the reviewer.
 */
function chosenModel(...named: Array<[string | undefined, string]>): [string, string] | undefined {
  return named.find((n): n is [string, string] => n[0] !== undefined);
}

/** A model flag's value as the worker gets it: a script's path made absolute (the worker may run elsewhere), an API model only with a key. */
async function modelSpecOf(model: string, flag: string, env: NodeJS.ProcessEnv): Promise<string> {
  if (isScriptedSpec(model)) {
    const parsed = parseModelSpec(model);
    if (parsed.kind === 'scripted') {
      await loadScript(parsed.scriptPath); // throws ScriptError naming the file and the problem
      return `scripted:${parsed.scriptPath}`;
    }
    return model;
  }
  // a model named by the repo or the environment is replaced offline with the flag
  const offline = flag.startsWith('--') ? flag : '--model';
  let parsed: ReturnType<typeof parseModelSpec>;
  try {
    parsed = parseModelSpec(model);
  } catch (err) {
    throw err instanceof ModelSpecError ? new UsageError(`${flag}: ${err.message}`) : err;
  }
  // an OpenAI-compatible server's key, if it takes one, and the worker's leave to call it are the worker's
  if (parsed.kind === 'api' && parsed.provider === 'openai' && !env.OPENAI_API_KEY && !env.OPENAI_BASE_URL)
    throw new UsageError(`${flag} ${model} needs OPENAI_API_KEY (or OPENAI_BASE_URL); offline, use ${offline} scripted:FILE`);
  if (parsed.kind === 'api' && parsed.provider === 'anthropic' && !env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL)
    throw new UsageError(`${flag} ${model} needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL); offline, use ${offline} scripted:FILE`);
  return model;
}
