/**
 * The one way Kiln runs git on the host. Every call gets the hardening in hardening.ts, a scrubbed
 * environment, stdin closed, capped output and a timeout; filter, diff and merge drivers the
 * repository's config defines are blanked by name. Plain child processes, not simple-git (it
 * waits ~50 ms after every command that prints nothing) nor execa (measured ~10 ms more per call
 * here than node's own spawn): the checkpoint runs three git commands per turn. In the worker they
 * are started by its spawner (process/spawn.ts), which keeps fork's cost off the event loop.
 */
import { lstat, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { spawnCommand } from '../process/spawn.js';
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
  /** what git reads on stdin (a list of objects for pack-objects); closed otherwise */
  input?: string;
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

/** `git <hardening> sub args...`, collected up to the cap; `sub` names the command in errors. */
function exec(dir: string, sub: string, args: readonly string[], env: Record<string, string>, o: GitOptions): Promise<GitResult> {
  const cap = o.maxBytes ?? MAX_OUTPUT_BYTES;
  const argv = [...hardenedGitArgs(), sub, ...args];
  const fail = (why: string) => new GitError(argv, `git ${sub} in ${dir}: ${why}`);
  return new Promise((resolve, reject) => {
    const child = spawnCommand('git', argv, {
      cwd: dir,
      env,
      stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
    if (o.input !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(o.input);
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let over = false;
    const take = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > cap) {
        over = true;
        child.kill('SIGKILL');
      } else into.push(chunk);
    };
    child.stdout!.on('data', take(out));
    child.stderr!.on('data', take(err));
    child.on('error', (e: Error) => reject(fail(e.message)));
    child.on('close', (code: number | null, signal: string | null) => {
      if (over) return reject(fail('printed more than the cap'));
      if (code === null) return reject(fail(signal === 'SIGTERM' ? 'timed out' : `killed by ${signal}`));
      resolve({ exitCode: code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/**
 * `-c`-style overrides that blank every filter (clean/smudge/process), diff (command/textconv)
 * and merge driver the repository's config defines: .gitattributes, which the agent edits, picks
 * which one runs. Reading config runs nothing. A config git cannot read fails the call.
 *
 * The answer is kept per directory while every config file git reads for it is byte-for-byte the
 * same (see configFingerprint): the look after each command would otherwise start one more git
 * process just to learn that nothing changed.
 */
async function driverOverrides(dir: string, env: Record<string, string>, o: GitOptions): Promise<Array<[string, string]>> {
  const print = await configFingerprint(dir);
  const kept = print === undefined ? undefined : knownDrivers.get(dir);
  if (kept && kept.print === print) return kept.overrides;
  const res = await exec(dir, 'config', ['--null', '--get-regexp', DRIVER_KEYS], env, o);
  if (res.exitCode !== 0 && res.exitCode !== 1) throw new GitError(['config'], `git cannot read the configuration of ${dir}: ${firstLine(res.stderr)}`);
  const out: Array<[string, string]> = [];
  // exit 1: none defined
  for (const entry of res.exitCode === 0 ? res.stdout.split('\0') : []) {
    const key = entry.split('\n')[0];
    if (!key) continue;
    out.push([key, '']);
    if (key.startsWith('filter.')) out.push([`${key.slice(0, key.lastIndexOf('.'))}.required`, 'false']);
  }
  if (print !== undefined) {
    if (knownDrivers.size >= MAX_KNOWN_DRIVERS) knownDrivers.clear();
    knownDrivers.set(dir, { print, overrides: out });
  }
  return out;
}

const knownDrivers = new Map<string, { print: string; overrides: Array<[string, string]> }>();
const MAX_KNOWN_DRIVERS = 256;

/**
 * The text of every file git reads the configuration of `dir` from: the .git pointer of a linked
 * worktree, the repository's config, and the worktree's own. System and global config are off
 * (hardening.ts). undefined — nothing is kept — when `dir` is not a repository's top, when a file
 * cannot be read, or when the config includes other files: an include can name any file.
 */
async function configFingerprint(dir: string): Promise<string | undefined> {
  try {
    const dotGit = join(dir, '.git');
    const st = await lstat(dotGit);
    let gitDir = dotGit;
    let pointer = '';
    if (st.isFile()) {
      pointer = await readFile(dotGit, 'utf8');
      const m = /^gitdir: (.+)$/m.exec(pointer);
      if (!m) return undefined;
      gitDir = resolve(dir, m[1]!.trim());
    } else if (!st.isDirectory()) return undefined;
    const common = await readFile(join(gitDir, 'commondir'), 'utf8').then(
      (c) => resolve(gitDir, c.trim()),
      () => gitDir,
    );
    const parts = [pointer, gitDir, common];
    for (const file of new Set([join(common, 'config'), join(gitDir, 'config'), join(gitDir, 'config.worktree')])) {
      parts.push(file, await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? '\0absent' : Promise.reject(e))));
    }
    const text = parts.join('\0');
    return /^\s*\[\s*include/im.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

function firstLine(s: string): string {
  return s.trim().split('\n')[0] ?? '';
}

export interface HardenedGit {
  /** the exit code is data */
  result(args: readonly string[]): Promise<GitResult>;
  /** stdout, or a GitError naming git's complaint */
  run(args: readonly string[]): Promise<string>;
}

/**
 * Git bound to one directory: the repository's drivers are read once for the calls that follow
 * (the checkpoint's read-tree, add and diff), so each call is one process.
 */
export async function hardenedGit(dir: string, o: GitOptions = {}): Promise<HardenedGit> {
  const env = environment(o);
  const withDrivers = { ...env, ...configEnv(await driverOverrides(dir, env, o)) };
  const result = ([sub = 'help', ...rest]: readonly string[]) =>
    exec(dir, sub, [...(DIFF_SUBCOMMANDS.has(sub) ? HARDENED_DIFF_FLAGS : []), ...rest], withDrivers, o);
  const run = async (args: readonly string[]) => {
    const res = await result(args);
    if (res.exitCode !== 0) throw new GitError(args, `git ${args[0] ?? ''} failed in ${dir}: ${firstLine(res.stderr) || `exit ${res.exitCode}`}`, res.exitCode);
    return res.stdout;
  };
  return { result, run };
}

/** One hardened `git args` in dir; the exit code is data. */
export async function gitResult(dir: string, args: readonly string[], o: GitOptions = {}): Promise<GitResult> {
  return (await hardenedGit(dir, o)).result(args);
}

/** One hardened `git args` in dir: stdout, or a GitError naming git's complaint. */
export async function git(dir: string, args: readonly string[], o: GitOptions = {}): Promise<string> {
  return (await hardenedGit(dir, o)).run(args);
}
