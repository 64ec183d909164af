/**
 * The compiled code of each build `kiln dev` ran, kept under $KILN_HOME/builds/<build id>, so
 * runs pinned to a build that a rebuild replaced can still finish on that build's own workflow
 * code (a rebuild overwrites dist/ in place). ~7 MB a build; a build is dropped once no open run
 * is pinned to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kilnHome } from '../../embedded.js';

function keptBuildDir(buildId: string): string {
  return join(kilnHome(), 'builds', buildId);
}

const workerOf = (root: string) => join(root, 'dist', 'src', 'worker.js');

export function isKept(buildId: string): boolean {
  return existsSync(workerOf(keptBuildDir(buildId)));
}

/**
 * Keeps this process's own build, when it runs compiled (from source there is no dist to keep).
 * Copied to a temporary name and renamed, so a half-written copy is never taken for a build.
 */
export function keepThisBuild(buildId: string): boolean {
  const distSrc = fileURLToPath(new URL('../..', import.meta.url));
  if (extname(fileURLToPath(import.meta.url)) !== '.js' || !existsSync(join(distSrc, 'worker.js'))) return false;
  const dir = keptBuildDir(buildId);
  if (isKept(buildId)) return true;
  const root = dirname(dirname(distSrc));
  const tmp = `${dir}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  cpSync(distSrc, join(tmp, 'dist', 'src'), { recursive: true });
  cpSync(join(root, 'package.json'), join(tmp, 'package.json'));
  // the dependencies of the install it came from; the workflow code, which pins the build, is the copy
  symlinkSync(realpathSync(join(root, 'node_modules')), join(tmp, 'node_modules'));
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return true;
}

/** Drops the kept builds no longer needed: neither `keep` (this build, builds open runs wait for). */
export function pruneKeptBuilds(keep: Set<string>): void {
  const builds = join(kilnHome(), 'builds');
  if (!existsSync(builds)) return;
  for (const name of readdirSync(builds)) if (!keep.has(name)) rmSync(join(builds, name), { recursive: true, force: true });
}

export interface KeptWorker {
  buildId: string;
  child: ChildProcess;
  log: string;
  /** when it said it was ready (ms since the epoch) */
  readyAt: number;
  stop(): Promise<void>;
}

/**
 * A worker of a kept build, as its own process, on the same server and deployment. KILN_BUILD_ID
 * says its build outright: it is that build's code, and it must serve the runs pinned to it.
 * Being a later worker of the deployment, it does not take new runs.
 */
export async function startKeptWorker(buildId: string, env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<KeptWorker> {
  const dir = keptBuildDir(buildId);
  mkdirSync(dir, { recursive: true });
  const log = join(dir, 'worker.log');
  const fd = openSync(log, 'w');
  const child = spawn(process.execPath, [workerOf(dir)], { env: { ...env, KILN_BUILD_ID: buildId }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + timeoutMs;
  while (!readFileSync(log, 'utf8').includes('kiln worker ready')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      const tail = readFileSync(log, 'utf8').trim().split('\n').slice(-3).join(' | ');
      throw new Error(`the worker of build ${buildId} did not start (${tail || 'no output'}; ${log})`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    buildId,
    child,
    log,
    readyAt: Date.now(),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      // the runs are durable: a worker that overruns its shutdown loses nothing by being killed
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
