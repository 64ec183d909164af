/**
 * A private PostgreSQL for a one-machine cluster: its own data directory, its own port, loopback
 * only, trust auth (nothing but this machine can reach it). PostgreSQL refuses to run as root,
 * so as root the server runs as an unprivileged system user ("postgres" where the package made
 * one) that owns the data directory.
 */
import { execa, type ResultPromise } from 'execa';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { KilnInputError } from '../shared/errors.js';
import { settingsFrom } from '../settings.js';

export class PostgresMissingError extends KilnInputError {
  override name = 'PostgresMissingError';
}

/** The PostgreSQL server binaries: KILN_PG_BIN, else the newest /usr/lib/postgresql/N/bin, else pg_config's. */
export function findPgBin(env: NodeJS.ProcessEnv = process.env): string {
  const fix = 'install PostgreSQL 12+ (Debian/Ubuntu: apt-get install postgresql-15) or set KILN_PG_BIN to the directory holding initdb and postgres';
  const given = settingsFrom(env).pgBin;
  if (given) {
    if (!existsSync(join(given, 'initdb'))) throw new PostgresMissingError(`KILN_PG_BIN=${given} holds no initdb: ${fix}`);
    return given;
  }
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => existsSync(join(debian, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return join(debian, versions[0], 'bin');
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    // no pg_config either
  }
  throw new PostgresMissingError(`PostgreSQL is not installed: ${fix}`);
}

/** The uid/gid to run PostgreSQL as: ourselves, or (as root) an unprivileged system user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      // no such user: try the next
    }
  }
  throw new PostgresMissingError('PostgreSQL cannot run as root and there is no "postgres" or "nobody" user to run it as: create one (useradd -r postgres)');
}

export interface Postgres {
  port: number;
  /** user with trust auth; the password is ignored */
  user: string;
  process: ResultPromise;
  stop(): Promise<void>;
}

/** Initialises `dir/data` the first time; starts the server on 127.0.0.1:port with its socket in `dir`. */
export async function startPostgres(o: { dir: string; port: number; user?: string; env?: NodeJS.ProcessEnv }): Promise<Postgres> {
  const bin = findPgBin(o.env);
  const user = o.user ?? 'temporal';
  const as = runAs();
  const data = join(o.dir, 'data');
  mkdirSync(o.dir, { recursive: true });
  if (as) {
    chownSync(o.dir, as.uid, as.gid);
    const reach = await execa('test', ['-x', o.dir], { ...as, reject: false });
    if (reach.exitCode !== 0) {
      throw new PostgresMissingError(
        `as root, PostgreSQL runs as uid ${as.uid}, which cannot reach ${o.dir} (a parent directory is private): pick a directory under /var/lib or /tmp`,
      );
    }
  }
  const opts = { ...(as ?? {}), env: { ...process.env, LC_ALL: 'C' }, reject: false, all: true } as const;
  if (!existsSync(join(data, 'PG_VERSION'))) {
    const init = await execa(join(bin, 'initdb'), ['-D', data, '-U', user, '--auth=trust', '-E', 'UTF8', '--no-sync'], opts);
    if (init.exitCode !== 0) throw new Error(`initdb failed: ${String(init.all).slice(-1000)}`);
  }
  const child = execa(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(o.port), '-k', o.dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    { ...opts, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', cleanup: true, all: false },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited (${child.exitCode}) before it was ready: ${stderr.trim().slice(-500)}`);
    const ready = await execa(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(o.port), '-U', user], { reject: false });
    if (ready.exitCode === 0) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`postgres did not accept connections on 127.0.0.1:${o.port} within 60 s: ${stderr.trim().slice(-500)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    port: o.port,
    user,
    process: child,
    async stop() {
      if (child.exitCode !== null) return;
      // SIGINT is PostgreSQL's "fast" shutdown: open sessions are ended, data is flushed
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await child;
      clearTimeout(timer);
    },
  };
}
