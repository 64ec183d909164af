/**
 * The production Temporal server and its SQL schema tool, for a real cluster on PostgreSQL.
 * Built once from the Go module proxy into the same cache as the Temporal CLI; the schema files
 * come with the server module, which that build leaves in the Go module cache.
 */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { goInstall, kilnCacheRoot, TemporalCliError } from './binary.js';
import { settingsFrom } from '../settings.js';

export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';
const PACKAGES = ['cmd/server', 'cmd/tools/sql'];

export interface ServerBinaries {
  /** `server --root DIR --config config --env development start` */
  server: string;
  /** temporal-sql-tool: create-database, setup-schema, update-schema */
  sql: string;
  /** schema/postgresql/v12 in the server module: temporal/versioned, visibility/versioned */
  schemaDir: string;
}

export function serverCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(kilnCacheRoot(env), 'temporal-server', TEMPORAL_SERVER_VERSION);
}

async function goModCache(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (env.GOMODCACHE) return env.GOMODCACHE;
  const res = await execa('go', ['env', 'GOMODCACHE'], { env, reject: false });
  return res.exitCode === 0 && res.stdout.trim() ? res.stdout.trim() : undefined;
}

/** The module's PostgreSQL schema directory, if the module is in the Go module cache. */
export async function findSchemaDir(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const given = settingsFrom(env).temporalSchemaDir;
  if (given) return existsSync(given) ? given : undefined;
  const mod = await goModCache(env);
  const dir = mod && join(mod, `${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
  return dir && existsSync(join(dir, 'temporal', 'versioned')) ? dir : undefined;
}

/** What is already there, or undefined (nothing is built). */
export async function findServerBinaries(env: NodeJS.ProcessEnv = process.env): Promise<ServerBinaries | undefined> {
  const dir = serverCacheDir(env);
  const server = join(dir, 'server');
  const sql = join(dir, 'sql');
  if (!existsSync(server) || !existsSync(sql)) return undefined;
  const schemaDir = await findSchemaDir(env);
  return schemaDir ? { server, sql, schemaDir } : undefined;
}

/** Builds the server and the sql tool into the cache unless they are there (≈3 min, once). */
export async function provisionServerBinaries(opts: { env?: NodeJS.ProcessEnv; log?: (s: string) => void } = {}): Promise<ServerBinaries> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => {});
  const found = await findServerBinaries(env);
  if (found) {
    log(`temporal server: ${found.server} (already there)`);
    return found;
  }
  const dir = serverCacheDir(env);
  log(`temporal server: building ${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION} (server, sql tool) into ${dir} (takes a few minutes, once)`);
  await goInstall(
    PACKAGES.map((p) => `${TEMPORAL_SERVER_MODULE}/${p}@${TEMPORAL_SERVER_VERSION}`),
    dir,
    env,
    'the Temporal server',
    'use docker-compose.yml (see docs/cluster.md)',
  );
  const built = await findServerBinaries(env);
  if (!built) throw new TemporalCliError(`go install put no server/sql binary in ${dir}, or the schema files are not in the Go module cache`);
  log(`temporal server: built ${built.server}`);
  return built;
}
