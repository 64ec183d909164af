/**
 * The run's worktree: created once per run (a retry finds it), set up outside the model's
 * control, and turned into a patch at the end. The user's own checkout is never touched.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { KilnConfigError, loadRepoConfig, realPathsInRepo } from '../policy/repo-config.js';
import { loadRunSettings } from '../policy/precedence.js';
import { checkRepoPlaces, checkRunRequest } from '../policy/run-request.js';
import { repoPlaces } from './repo-places.js';
import { kilnHomeDir } from '../policy/trust.js';
import { registerRunSecrets } from '../store/secrets.js';
import { sandboxSensitive } from './run-policy.js';
import { redact } from '../redact/index.js';
import { artifactsDir, worktreeDir } from '../shared/paths.js';
import type { RunInput } from '../shared/types.js';
import type { HeldSetup, PrepareResult } from '../shared/contracts.js';
import { judgeSetup } from '../policy/approvals.js';
import type { PolicyConfig } from '../policy/config.js';
import { createHash } from 'node:crypto';
import type { ActivityDeps } from './deps.js';
import { git } from '../git/run.js';
import { heartbeating } from './heartbeat.js';
import { runCache, trustedCache } from '../checks/caches.js';
import { ensureBaseline } from './verify.js';
import { runSetupCommand } from './check-runs.js';
import { protectedPathsAtBase } from './protected-mounts.js';
import { runGitView } from './git-view.js';
import { bringIncludes } from './verify-tree.js';
import { excludeList } from '../store/clutter.js';
import { firstLook, forgetWorktreeTree } from './snapshot.js';
import { readySandbox } from './tool-command.js';
import { firstContextAhead } from './first-context.js';
import { discardKeptSandbox } from '../sandbox/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  appendEvent,
  loadRun,
  readJson,
  runDir,
  saveRun,
  stateDir,
  claimRunDir,
  writeJsonAtomic,
  writeTextAtomic,
  type RunRecord,
} from '../store/run-files.js';

/** Setup output kept in the blocked reason: enough to see the error, small enough for history. */
const SETUP_TAIL_CHARS = 2000;
/** How long prepare waits for the first look: ~20 ms on a small repo, ~450 ms on 50,000 files. */
const FIRST_LOOK_WAIT_MS = 100;

/**
 * Makes the run's worktree on this host. With `rebuild`, the host that held it is gone: the
 * worktree is made afresh here from the base commit plus the last checkpoint patch, and the
 * conversation starts over (the workflow tells the model what happened). With `baselineApart`,
 * the workflow takes the baseline itself (takeBaseline), beside the model's first turns.
 */
export async function prepareWorkspace(deps: ActivityDeps, request: RunInput, rebuild?: RebuildRequest, o?: PrepareOptions): Promise<PrepareResult> {
  const input = honouredRequest(request, deps);
  const repo = resolve(input.repo);
  // before anything is read or written through the repo: where its git and .kiln really are
  if (deps.operator?.repoRoots) checkRepoPlaces(await repoPlaces(repo), deps.operator);
  await claimRunDir(repo, input.runId, o?.execution);
  const existing = await readJson<RunRecord>(join(stateDir(repo, input.runId), 'run.json'));
  const found = await gitDirAndBase(repo, existing?.baseCommit ? undefined : (input.base ?? 'HEAD'));
  await excludeKilnDir(resolve(repo, found.common));
  const wt = worktreeDir(repo, input.runId);
  const base = existing?.baseCommit ?? found.base!;
  if (rebuild) await setAsideLostState(repo, input.runId, wt, rebuild.lostHost);
  if (!(await isWorktree(repo, wt))) {
    await mkdir(dirname(wt), { recursive: true });
    if (existsSync(wt)) await rm(wt, { recursive: true, force: true });
    await git(repo, ['worktree', 'add', '--detach', wt, base]);
  }
  // setup and a restored checkpoint change the worktree outside any command
  await forgetWorktreeTree(stateDir(repo, input.runId));
  const restored = rebuild ? await applyCheckpoint(wt, rebuild, stateDir(repo, input.runId)) : undefined;

  // config errors are KilnErrors: the activity boundary makes them non-retryable (activities/failure.ts)
  const config = await loadRepoConfig(repo);
  const settings = await loadRunSettings(repo, {
    home: kilnHomeDir(deps.env),
    checks: input.checks,
    setup: input.setup,
    approvalMode: input.approvalMode,
    agentsDir: wt,
  });
  // before anything of this run is redacted: setup output, events, the model's first message
  await registerRunSecrets([repo, wt], settings.policy);
  const checks = settings.checks;
  const rec: RunRecord = {
    input: { ...input, repo },
    worktree: wt,
    baseCommit: base,
    checks,
    hostQueue: deps.hostQueue,
    createdAt: existing?.createdAt ?? new Date().toISOString(),
    // real paths: the sandbox binds them as they are and refuses one that is a symlink (bwrap-args.ts)
    linked: await realPathsInRepo(repo, settings.link),
    policy: settings.policy,
    mode: settings.mode,
    exclude: excludeList(config.exclude),
    setup: settings.setup,
    brought: { include: settings.include, link: settings.link },
    protectedPaths: input.allowTestEdits ? [] : await protectedPathsAtBase(repo, base, checks, settings.policy, input.protect ?? []),
    gitView: await runGitView(repo, base, settings.policy, deps.env),
  };
  await saveRun(rec);
  await appendEvent(repo, input.runId, { type: 'settings', trust: settings.trust, from: settings.from, ignored: settings.ignored });
  await mkdir(artifactsDir(repo, input.runId), { recursive: true });

  const patchRule = settings.policy.approvals.patch;
  const result: PrepareResult = {
    ok: true,
    worktree: wt,
    baseCommit: base,
    checks,
    hostQueue: deps.hostQueue,
    ...(restored ? { restored } : {}),
    ...(o?.approvals && patchRule ? { patchRule } : {}),
    ...(settings.policy.review === 'required' ? { reviewRequired: true } : {}),
  };
  if (restored) await appendEvent(repo, input.runId, { type: 'rebuild', lostHost: rebuild!.lostHost, host: deps.hostQueue, ...restored });
  // The worktree as the model will first see it: its first look starts now. A small repo's is
  // done within the wait (before the first turn, which a fast reply would otherwise wait on); a
  // big repo's goes on beside the first model call, which waits for it (snapshot.ts, firstLook).
  const ready = async () => {
    const look = firstLook(wt, base, stateDir(repo, input.runId)).catch(() => undefined);
    await Promise.race([look, sleep(FIRST_LOOK_WAIT_MS, undefined, { ref: false })]);
    // then, beside the hand-off to the first turn: the first message's context, and the sandbox
    // the run's read-only commands will run in (started with the look, they slowed it down)
    void firstContextAhead(rec);
    readySandbox(rec, deps);
    return result;
  };
  if (existing && (await readJson<{ ok: boolean }>(join(stateDir(repo, input.runId), 'setup.json')))?.ok) return ready();

  await bringIncludes(repo, wt, rec.brought!);

  const setup = settings.setup;
  const held = o?.approvals ? heldSetup(settings.policy, setup) : undefined;
  if (held && held.hash !== o?.setupApproved) {
    // a setup other than the one approved (the repo's config changed meanwhile) runs nowhere;
    // a rebuild cannot stop for a person, so one its approvers never saw ends the run
    if (o?.setupApproved || rebuild) throw new KilnConfigError(`the setup changed after it was approved (now: ${setup.join(' && ')}); start the run again`);
    await appendEvent(repo, input.runId, { type: 'setup', commands: setup, held: held.rule });
    return { ...result, setupHeld: held };
  }
  if (setup.length) {
    const sandbox = await deps.sandbox(input.sandbox);
    // before the model's first turn the code is the repo's own: setup may warm the repo's trusted cache
    const cacheDir = rebuild ? await runCache(repo, input.runId) : await trustedCache(repo);
    const log: string[] = [];
    for (const command of setup) {
      const res = await runSetupCommand(sandbox, command, { dir: wt, linked: rec.linked, sensitive: sandboxSensitive(settings.policy), cacheDir });
      const out = redact(res.output);
      log.push(`$ ${command}\n${out}\n[exit ${res.exitCode ?? res.signal}${res.timedOut ? ', timed out' : ''}]`);
      await appendFile(join(runDir(repo, input.runId), 'setup.log'), log[log.length - 1] + '\n');
      if (res.exitCode !== 0) {
        await writeJsonAtomic(join(stateDir(repo, input.runId), 'setup.json'), { ok: false });
        return { ...result, ok: false, reason: `setup command failed: ${command}\n${out.slice(-SETUP_TAIL_CHARS)}` };
      }
    }
    await appendEvent(repo, input.runId, { type: 'setup', commands: setup, ok: true });
    // setup may have written credentials of its own (a generated .env, an .npmrc)
    await registerRunSecrets([wt], settings.policy, true);
  }
  // the baseline before the model's first turn: which tests fail and pass on the base (and a warm cache)
  if (checks.length && !o?.baselineApart) {
    const sandbox = await deps.sandbox(input.sandbox).catch(() => undefined);
    if (sandbox) await ensureBaseline(rec, sandbox, setup, rec.brought!, (t) => appendFile(join(runDir(repo, input.runId), 'tests.log'), t));
  }
  // the model's commands get their own copy of the warm cache, made now rather than in the first command
  await heartbeating(() => runCache(repo, input.runId));
  await writeJsonAtomic(join(stateDir(repo, input.runId), 'setup.json'), { ok: true });
  return ready();
}

/**
 * The checks on the pristine base, taken beside the model's first turns instead of before them:
 * the baseline has its own checkout, so nothing the model does reaches it, and the workflow
 * awaits it before the first verify, which judges against it. Once per run: a retry, or a verify
 * that got there first, finds baseline.json and runs nothing.
 */
export async function takeBaseline(deps: ActivityDeps, ref: { runId: string; repo: string }): Promise<void> {
  deps.crash('baseline');
  const rec = await loadRun(ref.repo, ref.runId);
  if (!rec.checks.length) return;
  // a sandbox that cannot start here cannot in verify either, which puts it in the verdict
  const sandbox = await deps.sandbox(rec.input.sandbox).catch(() => undefined);
  if (!sandbox) return;
  // a run recorded before `brought` existed brings nothing: its repo's trust was not checked for it
  await ensureBaseline(rec, sandbox, rec.setup ?? rec.input.setup, rec.brought ?? { include: [], link: [] }, (t) =>
    appendFile(join(runDir(ref.repo, ref.runId), 'tests.log'), t),
  );
}

export interface PrepareOptions {
  /** leave the baseline out: the workflow runs takeBaseline beside the first turns */
  baselineApart?: boolean;
  /** the workflow enforces the policy's approvals section: stop before a setup it names, say its patch rule */
  approvals?: boolean;
  /** the hash of the setup its approvers approved: that setup, and only that one, runs */
  setupApproved?: string;
  /** the first execution's Temporal run id: the run's files belong to it (claimRunDir) */
  execution?: string;
}

/** The setup the policy wants approved before it runs, with the hash that binds the approval to it. */
function heldSetup(policy: PolicyConfig, setup: string[]): HeldSetup | undefined {
  const ask = judgeSetup(policy, setup);
  if (!ask) return undefined;
  const needs = { approvers: ask.needs.approvers, authenticated: ask.needs.authenticated, ...(ask.needs.starterCounts ? { starterCounts: true } : {}) };
  return { commands: setup, hash: createHash('sha256').update(JSON.stringify(setup)).digest('hex'), rule: ask.rule, reason: ask.reason, needs };
}

export interface RebuildRequest {
  /** the host queue that stopped taking work */
  lostHost: string;
  /** the last checkpoint: the worktree's patch against the base (absent: none was taken) */
  patch?: string;
  /** the turn the checkpoint was taken at */
  turn: number;
}

/**
 * What the lost host left on this machine (the same machine when it only looked lost) is set
 * aside: a fresh worktree, a fresh conversation and a fresh setup, as on any other machine.
 */
async function setAsideLostState(repo: string, runId: string, wt: string, lostHost: string): Promise<void> {
  await removeWorktree(repo, wt);
  const state = stateDir(repo, runId);
  const convo = join(state, 'conversation.json');
  if (existsSync(convo)) await rename(convo, join(state, `conversation.lost-${lostHost.replace(/[^\w.-]/g, '_')}-${Date.now()}.json`));
  await rm(join(state, 'setup.json'), { force: true });
}

async function applyCheckpoint(wt: string, r: RebuildRequest, scratch: string): Promise<NonNullable<PrepareResult['restored']>> {
  if (!r.patch) return { applied: false, files: [], turn: r.turn, note: 'no checkpoint had been taken: the worktree is at the base commit' };
  const file = join(scratch, 'checkpoint.patch');
  await writeTextAtomic(file, r.patch);
  const files = [...r.patch.matchAll(/^diff --git a\/(.+?) b\//gm)].map((m) => m[1]!);
  try {
    await git(wt, ['apply', '--binary', '--whitespace=nowarn', file]);
    return { applied: true, files, turn: r.turn };
  } catch (err) {
    // a checkpoint is redacted: a change that touched a secret cannot be restored verbatim
    return {
      applied: false,
      files,
      turn: r.turn,
      note: `the checkpoint did not apply (${(err as Error).message.split('\n')[0]}); the worktree is at the base commit`,
    };
  }
}

/**
 * The repository's common git dir and, when asked, the base commit, in one git process (each
 * spawn from a worker of a few hundred MB costs milliseconds, more on a busy machine, and this
 * is on the way to the model's first turn); when that fails, one at a time, for the error that says which.
 */
async function gitDirAndBase(repo: string, ref: string | undefined): Promise<{ common: string; base?: string }> {
  const verify = ref === undefined ? [] : ['--verify', `${ref}^{commit}`];
  const both = await git(repo, ['rev-parse', '--git-common-dir', ...verify]).catch(() => undefined);
  const lines = both?.trim().split('\n');
  if (lines && lines.length === 1 + (ref === undefined ? 0 : 1)) return { common: lines[0]!, base: lines[1] };
  const common = (await git(repo, ['rev-parse', '--git-common-dir'])).trim();
  if (ref === undefined) return { common };
  try {
    return { common, base: (await git(repo, ['rev-parse', '--verify', `${ref}^{commit}`])).trim() };
  } catch {
    throw new KilnConfigError(`base ${ref} is not a commit in ${repo}`);
  }
}

async function excludeKilnDir(commonGitDir: string): Promise<void> {
  const file = join(commonGitDir, 'info', 'exclude');
  const text = await readFile(file, 'utf8').catch(() => '');
  if (text.split(/\r?\n/).some((l) => l.trim() === '.kiln/' || l.trim() === '/.kiln/')) return;
  await mkdir(dirname(file), { recursive: true });
  await appendFile(file, `${text && !text.endsWith('\n') ? '\n' : ''}# Kiln runs and worktrees\n.kiln/\n`);
}

async function isWorktree(repo: string, wt: string): Promise<boolean> {
  if (!existsSync(join(wt, '.git'))) return false;
  const list = await git(repo, ['worktree', 'list', '--porcelain']);
  return list.split('\n').some((l) => l === `worktree ${wt}`);
}

/** The workflow input is a client's request: bounded by this worker's operator, unknown fields refused. */
function honouredRequest(request: RunInput, deps: ActivityDeps): RunInput {
  // a refusal is a KilnInputError: the activity boundary makes it non-retryable
  return checkRunRequest(request, deps.operator ?? { allowSandboxOff: false });
}

export async function removeWorktree(repo: string, wt: string): Promise<void> {
  // its readers' sandbox goes with it (it holds the worktree's directory bound)
  discardKeptSandbox(wt);
  if (existsSync(wt)) {
    try {
      await git(repo, ['worktree', 'remove', '--force', '--force', wt]);
    } catch {
      await rm(wt, { recursive: true, force: true });
    }
  }
  await git(repo, ['worktree', 'prune']).catch(() => undefined);
}
