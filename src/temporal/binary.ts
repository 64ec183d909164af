/**
 * The official Temporal CLI (dev server + Web UI). Offline machines cannot use the SDK's own
 * download, so Kiln builds the CLI from the Go module proxy once and caches it outside the repo.
 */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KilnInputError } from '../shared/errors.js';
import { settingsFrom } from '../settings.js';

/** v1.6+ cannot be `go install`ed (its go.mod has a replace directive). */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

/** The Temporal CLI cannot be found or built: `kiln setup` (Go) fixes it. */
export class TemporalCliError extends KilnInputError {
  override name = 'TemporalCliError';
}

/** ~/.cache/kiln (or under XDG_CACHE_HOME): built binaries live here, outside any repo. */
export function kilnCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kiln');
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnCacheRoot(env), 'temporal-cli', TEMPORAL_CLI_VERSION);
}

/**
 * The binary to use: KILN_TEMPORAL_CLI if set (it must exist), else the cached build, else
 * undefined (the caller falls back to the SDK's download, which needs the internet).
 */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const override = settingsFrom(env).temporalCli;
  if (override) {
    if (!existsSync(override)) throw new TemporalCliError(`KILN_TEMPORAL_CLI=${override} does not exist; unset it or point it at a temporal binary`);
    return override;
  }
  const cached = join(cacheDir(env), 'temporal');
  return existsSync(cached) ? cached : undefined;
}

/** Builds the CLI into the cache unless it is already there. Returns its path. */
export async function provisionTemporalCli(opts: { env?: NodeJS.ProcessEnv; log?: (s: string) => void } = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => {});
  const found = findTemporalCli(env);
  if (found) {
    log(`temporal CLI: ${found} (already there)`);
    return found;
  }
  const dir = cacheDir(env);
  log(`temporal CLI: building ${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION} into ${dir} (takes a few minutes, once)`);
  await goInstall([`${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`], dir, env, 'the Temporal CLI', 'set KILN_TEMPORAL_CLI to an existing temporal binary');
  const bin = join(dir, 'temporal');
  log(`temporal CLI: built ${bin}`);
  return bin;
}

/**
 * `go install` of module packages into `gobin`. `what` names them in errors; `otherwise` says
 * what a user without Go can do instead.
 */
export async function goInstall(packages: string[], gobin: string, env: NodeJS.ProcessEnv, what: string, otherwise: string): Promise<void> {
  const go = await execa('go', ['version'], { env, reject: false });
  if (go.exitCode !== 0) {
    throw new TemporalCliError(
      `${what} is not installed and there is no Go toolchain to build it: install Go 1.22+ (https://go.dev/dl, or \`apt-get install golang\`), or ${otherwise}`,
    );
  }
  await mkdir(gobin, { recursive: true });
  const res = await execa('go', ['install', ...packages], {
    env: { ...env, GOBIN: gobin, CGO_ENABLED: env.CGO_ENABLED ?? '0' },
    reject: false,
    all: true,
  });
  if (res.exitCode !== 0) throw new TemporalCliError(`go install ${packages.join(' ')} failed:\n${String(res.all ?? '').slice(-2000)}`);
}
