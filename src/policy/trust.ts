/**
 * `kiln trust`: the user's word that a repo's own configuration may loosen what they allow.
 * Bound to a hash of the files that configure a run (like direnv's `allow`): any change to them
 * makes the repo untrusted again until the user trusts it anew. Kept under KILN_HOME, outside
 * every repo, so a repo cannot trust itself. Synchronous: a few small files, read once per run.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { settingsFrom } from '../settings.js';

/** The repo files that can loosen a run: policy, setup and checks, and the AGENTS.md checks. */
export const REPO_CONFIG_FILES = ['.kiln/policy.json', '.kiln/config', 'AGENTS.md', 'CLAUDE.md'] as const;

export function kilnHomeDir(env: NodeJS.ProcessEnv = process.env): string {
  return settingsFrom(env).home ?? join(homedir(), '.kiln');
}

export function trustStorePath(home: string): string {
  return join(home, 'trusted-repos.json');
}

interface TrustStore {
  [repo: string]: { hash: string; at: string };
}

function canonicalRepo(repo: string): string {
  try {
    return realpathSync(resolve(repo));
  } catch {
    return resolve(repo);
  }
}

/** sha256 over each config file's name and bytes (absent files count too: adding one changes it). */
export function repoConfigHash(repo: string): string {
  const h = createHash('sha256');
  for (const rel of REPO_CONFIG_FILES) {
    const bytes = readOrNull(join(repo, rel));
    h.update(`${rel}\0${bytes === null ? 'absent' : `${bytes.length}\0`}`);
    if (bytes) h.update(bytes);
    h.update('\0');
  }
  return h.digest('hex');
}

function readOrNull(file: string): Buffer | null {
  try {
    return readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}

function readStore(home: string): TrustStore {
  const text = readOrNull(trustStorePath(home))?.toString('utf8') ?? null;
  if (text === null) return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as TrustStore) : {};
  } catch {
    // a damaged store trusts nothing: fail closed
    return {};
  }
}

export type TrustState = 'trusted' | 'untrusted' | 'changed';

/** Whether the repo's configuration, as it is now, is what the user trusted. */
export function repoTrust(repo: string, home: string): TrustState {
  const entry = readStore(home)[canonicalRepo(repo)];
  if (!entry) return 'untrusted';
  return entry.hash === repoConfigHash(repo) ? 'trusted' : 'changed';
}

/** Records the current configuration as trusted; returns the hash recorded. */
export function trustRepo(repo: string, home: string): string {
  const store = readStore(home);
  const hash = repoConfigHash(repo);
  store[canonicalRepo(repo)] = { hash, at: new Date().toISOString() };
  writeStore(home, store);
  return hash;
}

export function untrustRepo(repo: string, home: string): boolean {
  const store = readStore(home);
  const key = canonicalRepo(repo);
  if (!store[key]) return false;
  delete store[key];
  writeStore(home, store);
  return true;
}

function writeStore(home: string, store: TrustStore): void {
  const file = trustStorePath(home);
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(store, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}
