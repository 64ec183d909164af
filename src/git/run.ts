/**
 * The one way Kiln runs git on the host. Every call gets the hardening in hardening.ts, a scrubbed
 * environment, stdin closed, capped output and a timeout; filter, diff and merge drivers the
 * repository's config defines are blanked by name. Plain child processes, not simple-git: that
 * library waits ~50 ms after every command that prints nothing, three times per checkpoint.
 */
import { execa } from 'execa';
import { KilnError } from '../shared/errors.js';
import { configEnv, DIFF_SUBCOMMANDS, DRIVER_KEYS, gitHardeningEnv, hardenedGitArgs, HARDENED_DIFF_FLAGS } from './hardening.js';

/** Patches of big refactors and file lists of monorepos stay well under this; a runaway does not. */
const MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

export interface GitOptions {
  /** a throwaway index instead of the repository's own (GIT_INDEX_FILE) */
  indexFile?: string;
  /** author and committer, for commits Kiln makes in repositories it created itself */
  identity?: { name: string; email: string };
  timeoutMs?: number;
  maxBytes?: number;
}

export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** git could not be run, did not finish, or (from `git`) exited non-zero. */
export class GitError extends KilnError {
  // a lock held by a concurrent git, a slow disk: worth another try
  readonly retryable = true;
  constructor(
    readonly args: readonly string[],
    message: string,
    readonly gitExitCode?: number,
  ) {
    super(message);
  }
}

function environment(o: GitOptions): Record<string, string> {
  const p = process.env;
  // only what git needs: the worker's own environment (editors, pagers, secrets, LD_*) stays out
  const base = { PATH: p.PATH ?? '/usr/bin:/bin', HOME: p.HOME ?? '/tmp', ...(p.TMPDIR ? { TMPDIR: p.TMPDIR } : {}) };
  return {
    ...gitHardeningEnv(base),
    LANG: 'C',
    LC_ALL: 'C',
    ...(o.indexFile ? { GIT_INDEX_FILE: o.indexFile } : {}),
    ...(o.identity
      ? { GIT_AUTHOR_NAME: o.identity.name, GIT_AUTHOR_EMAIL: o.identity.email, GIT_COMMITTER_NAME: o.identity.name, GIT_COMMITTER_EMAIL: o.identity.email }
      : {}),
  };
}

async function spawn(dir: string, argv: string[], env: Record<string, string>, o: GitOptions): Promise<GitResult> {
  const res = await execa('git', argv, {
    cwd: dir,
    env,
    extendEnv: false,
    stdin: 'ignore',
    reject: false,
    stripFinalNewline: false,
    maxBuffer: o.maxBytes ?? MAX_OUTPUT_BYTES,
    timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  });
  if (res.exitCode === undefined || res.timedOut || res.isMaxBuffer) {
    const why = res.timedOut ? 'timed out' : res.isMaxBuffer ? 'printed more than the cap' : res.shortMessage;
    throw new GitError(argv, `git ${argv.find((a) => !a.startsWith('-') && !a.includes('=')) ?? ''} in ${dir}: ${why}`);
  }
  return { exitCode: res.exitCode, stdout: String(res.stdout), stderr: String(res.stderr) };
}

/**
 * `-c`-style overrides that blank every filter (clean/smudge/process), diff (command/textconv)
 * and merge driver the repository's config defines: .gitattributes, which the agent edits, picks
 * which one runs. Reading config runs nothing. A config git cannot read fails the call.
 */
async function driverOverrides(dir: string, env: Record<string, string>, o: GitOptions): Promise<Array<[string, string]>> {
  const res = await spawn(dir, [...hardenedGitArgs(), 'config', '--null', '--get-regexp', DRIVER_KEYS], env, o);
  if (res.exitCode === 1) return []; // none defined
  if (res.exitCode !== 0) throw new GitError(['config'], `git cannot read the configuration of ${dir}: ${firstLine(res.stderr)}`);
  const out: Array<[string, string]> = [];
  for (const entry of res.stdout.split('\0')) {
    const key = entry.split('\n')[0];
    if (!key) continue;
    out.push([key, '']);
    if (key.startsWith('filter.')) out.push([`${key.slice(0, key.lastIndexOf('.'))}.required`, 'false']);
  }
  return out;
}

function firstLine(s: string): string {
  return s.trim().split('\n')[0] ?? '';
}

/** Runs `git args` in dir, hardened; the exit code is data. */
export async function gitResult(dir: string, args: readonly string[], o: GitOptions = {}): Promise<GitResult> {
  const env = environment(o);
  const drivers = await driverOverrides(dir, env, o);
  const [sub, ...rest] = args;
  const argv = [...hardenedGitArgs(), ...(sub === undefined ? [] : [sub, ...(DIFF_SUBCOMMANDS.has(sub) ? HARDENED_DIFF_FLAGS : []), ...rest])];
  return spawn(dir, argv, { ...env, ...configEnv(drivers) }, o);
}

/** Runs `git args` in dir, hardened; stdout, or a GitError naming git's complaint. */
export async function git(dir: string, args: readonly string[], o: GitOptions = {}): Promise<string> {
  const res = await gitResult(dir, args, o);
  if (res.exitCode !== 0) throw new GitError(args, `git ${args[0] ?? ''} failed in ${dir}: ${firstLine(res.stderr) || `exit ${res.exitCode}`}`, res.exitCode);
  return res.stdout;
}
