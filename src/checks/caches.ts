/**
 * Warm tool caches for commands (Go's build and module caches, npm's, pip's), kept so that one
 * run cannot poison another: a per-repo cache that only trusted commands write (setup before the
 * model's first turn, the baseline on the pristine base), and copies of it for the rest — one per
 * run for the model's commands, a fresh one for each verification, thrown away after.
 * A measured reason: `go test` on a 3-test package took ~9 s with a cold cache in the sandbox,
 * 0.2 s warm on the host.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { settingsFrom } from '../settings.js';

/** Where Kiln keeps what it can rebuild (check caches, the sandbox's git views): KILN_HOME, else ~/.cache/kiln. */
export function kilnCacheHome(env: NodeJS.ProcessEnv = process.env): string {
  return settingsFrom(env).home ?? join(homedir(), '.cache', 'kiln');
}

export function cacheRoot(repo: string, env: NodeJS.ProcessEnv = process.env): string {
  const base = settingsFrom(env).cacheDir ?? join(kilnCacheHome(env), 'check-caches');
  return join(base, createHash('sha256').update(resolve(repo)).digest('hex').slice(0, 16));
}

/** The repo's trusted cache: written only by commands that run code the model never touched. */
export async function trustedCache(repo: string): Promise<string> {
  const dir = join(cacheRoot(repo), 'trusted');
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The run's own copy, made once: the model's commands may write it, no other run reads it. */
export async function runCache(repo: string, runId: string): Promise<string> {
  const dir = join(cacheRoot(repo), 'runs', runId.replace(/[^\w.-]/g, '_'));
  if (!existsSync(dir)) await copyTrusted(repo, dir);
  return dir;
}

/** A fresh copy for one verification, so nothing the model wrote into a cache reaches the verdict. */
export async function scratchCache(repo: string): Promise<{ dir: string; dispose: () => Promise<void> }> {
  const dir = join(cacheRoot(repo), 'scratch', randomBytes(6).toString('hex'));
  await copyTrusted(repo, dir);
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

export async function dropRunCache(repo: string, runId: string): Promise<void> {
  await rm(join(cacheRoot(repo), 'runs', runId.replace(/[^\w.-]/g, '_')), { recursive: true, force: true });
}

async function copyTrusted(repo: string, dest: string): Promise<void> {
  const from = await trustedCache(repo);
  const tmp = `${dest}.tmp-${randomBytes(4).toString('hex')}`;
  await mkdir(tmp, { recursive: true });
  // Go marks module files read-only; a plain copy keeps the modes, and rm -rf with force handles them
  await cp(from, tmp, { recursive: true, force: true, verbatimSymlinks: true });
  await rm(dest, { recursive: true, force: true });
  await rename(tmp, dest);
}
