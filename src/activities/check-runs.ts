/**
 * Running the repo's setup and checks in a checkout for the verifier: the base's (baseline), the
 * verified tree's and the counterfactual's alike, so the three runs differ only in their trees.
 * Each check runs traced (which files it reached) and with the integrity preloads (the base's test
 * runtime), from a folder the sandbox binds read-only.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { integrityEnv } from '../checks/integrity.js';
import { readReports, reportEnv } from '../checks/reports.js';
import { SANDBOX_CACHE } from '../sandbox/toolchains.js';
import { protectedSet } from '../checks/protected.js';
import { readTrace, type CheckTrace } from '../checks/trace.js';
import type { CheckRun } from '../checks/judge.js';
import { redact } from '../redact/index.js';
import { hardenedGit } from '../git/run.js';
import type { CommandResult, Sandbox } from '../sandbox/types.js';
import { heartbeating, stopIfCancelled } from './heartbeat.js';
import { sandboxSensitive } from './run-policy.js';
import type { RunRecord } from '../store/run-files.js';

type Say = (t: string) => Promise<void>;

/** The run's sensitive globs for the sandbox (the record's policy, fixed at prepare). */
function maskedFor(rec: RunRecord): { sensitive?: ReturnType<typeof sandboxSensitive> } {
  return rec.policy ? { sensitive: sandboxSensitive(rec.policy) } : {};
}

/** A check's run with what the tracer saw of it (undefined: not traced, e.g. no strace on this host). */
export interface TracedCheckRun extends CheckRun {
  trace?: CheckTrace;
}

/** Where a verifier's runs keep their tracer logs and preloads: the run's state, outside every checkout. */
export function checkRuntimeDir(stateDir: string): string {
  return join(stateDir, 'check-runtime');
}

export interface CheckRunOptions {
  cacheDir: string;
  say: Say;
  /** checkRuntimeDir: the tracer's logs and the preloads */
  runtimeDir: string;
  /** the test files, which tell code under test from the runner in the trace */
  isTest: (path: string) => boolean;
}

export async function runCheck(sandbox: Sandbox, rec: RunRecord, dir: string, command: string, o: CheckRunOptions): Promise<TracedCheckRun> {
  const { cacheDir, say, runtimeDir } = o;
  const unique = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const traceFile = join(runtimeDir, `trace-${unique}.log`);
  const preloads = join(runtimeDir, `preload-${unique}`);
  // the runners' structured results: a new folder each run, in the cache folder the command may write
  const reports = {
    host: join(cacheDir, `.kiln-reports-${unique}`),
    inSandbox: join(sandbox.kind === 'bwrap' ? SANDBOX_CACHE : cacheDir, `.kiln-reports-${unique}`),
  };
  try {
    await mkdir(runtimeDir, { recursive: true });
    await mkdir(reports.host, { recursive: true });
    const files = (await (await hardenedGit(dir)).run(['ls-files', '-z'])).split('\0').filter(Boolean);
    const integrity = await integrityEnv(preloads, preloads, { dir, files });
    const res = await heartbeating(() =>
      sandbox.run(command, {
        workspace: dir,
        timeoutMs: rec.input.commandTimeoutMs,
        readOnlyPaths: [...(rec.linked ?? []), preloads],
        ...maskedFor(rec),
        env: { ...reportEnv(reports.inSandbox), ...integrity },
        cacheDir,
        traceFile,
        ...(rec.gitView ? { gitView: rec.gitView } : {}),
        signal: Context.current().cancellationSignal,
      }),
    );
    stopIfCancelled(`check: ${command.slice(0, 200)}`);
    // test names must not carry the checkout's own folder: the baseline and the verified tree live in different ones
    const output = redact(res.output).split(`${dir}/`).join('');
    const traced = res.traced ? ' traced' : '';
    await say(
      `$ ${command}\n${output}\n[exit ${res.exitCode ?? res.signal}${res.timedOut ? ', timed out' : ''}${res.sandboxed ? '' : ', UNSANDBOXED'}${traced}]\n`,
    );
    const trace = res.traced ? await readTrace(traceFile, dir, o.isTest).catch(() => undefined) : undefined;
    const written = await readReports(reports.host).catch(() => []);
    return { command, exitCode: res.exitCode, timedOut: res.timedOut, output, ...(written.length ? { reports: written } : {}), ...(trace ? { trace } : {}) };
  } catch (err) {
    if (err instanceof CancelledFailure) throw err;
    // the sandbox itself failed to start the command: like "not found", nothing the model did
    const output = `sandbox error: ${(err as Error).message}`;
    await say(`$ ${command}\n${output}\n`);
    return { command, exitCode: 127, timedOut: false, output };
  } finally {
    await rm(traceFile, { force: true });
    await rm(preloads, { recursive: true, force: true });
    await rm(reports.host, { recursive: true, force: true });
  }
}

/**
 * One setup command in `dir`, as prepare and the verifier's checkouts both run it: with network
 * (it fetches dependencies), for at most 20 minutes, the run's linked paths read-only; a cancel
 * that came meanwhile ends the activity here.
 */
export async function runSetupCommand(
  sandbox: Sandbox,
  command: string,
  o: { dir: string; linked: string[] | undefined; sensitive: ReturnType<typeof sandboxSensitive> | undefined; cacheDir: string },
): Promise<CommandResult> {
  const res = await heartbeating(() =>
    sandbox.run(command, {
      workspace: o.dir,
      timeoutMs: 20 * 60_000,
      network: true,
      readOnlyPaths: o.linked,
      ...(o.sensitive ? { sensitive: o.sensitive } : {}),
      cacheDir: o.cacheDir,
      signal: Context.current().cancellationSignal,
    }),
  );
  stopIfCancelled(`setup: ${command.slice(0, 200)}`);
  return res;
}

/** The run's setup in a checkout (network on, as at prepare time); returns why it failed. */
export async function runSetup(sandbox: Sandbox, rec: RunRecord, dir: string, setup: string[], cacheDir: string, say: Say): Promise<string | undefined> {
  for (const command of setup) {
    const res = await runSetupCommand(sandbox, command, { dir, linked: rec.linked, sensitive: maskedFor(rec).sensitive, cacheDir });
    await say(`$ ${command}   (setup)\n${redact(res.output).slice(-4000)}\n[exit ${res.exitCode ?? res.signal}]\n`);
    if (res.exitCode !== 0) return `${command} (exit ${res.exitCode ?? res.signal})`;
  }
  return undefined;
}

/** The repo's test files by the protected set's globs: in a trace they mark where code under test starts. */
export function testFiles(rec: RunRecord): (path: string) => boolean {
  const set = protectedSet(rec.policy?.protected ?? [], rec.checks, { pinned: rec.input.protect ?? [] });
  return (p) => set.isProtected(p);
}
